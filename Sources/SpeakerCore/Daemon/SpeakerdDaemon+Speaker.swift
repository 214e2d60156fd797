import Glibc

/// The target speaker: connecting it, discovering others, and the reconnect controller.
extension SpeakerdDaemon {
    /// Makes `address` the speaker to keep; a new target gets a fresh reconnect controller.
    func setTarget(_ address: BluetoothAddress, name: String) async {
        if target?.address == address {
            target = (address, name)
            return
        }
        await reconnect?.shutdown()
        reconnectWatcher?.cancel()
        target = (address, name)
        var policy = ReconnectPolicy(clock: clock, random: SystemRandomNumberGenerator(), cap: configuration.reconnectMax)
        policy.resumeDelay = .seconds(2)
        let controller = ReconnectController(policy: policy, clock: clock) { [weak self] in
            guard let self else { return .failed(reason: "daemon stopped") }
            return await self.attemptConnection(to: address)
        }
        reconnect = controller
        reconnectWatcher = Task { [weak self] in
            for await change in controller.changes {
                await self?.reconnectChanged(change, address: address)
            }
        }
        await publish()
    }

    /// One connect attempt on the current target, through the reconnect controller so the
    /// policy always knows what happened.
    func connectTarget() async -> ReconnectController<ErasedClock>.AttemptResult {
        guard let reconnect else { return .failed(reason: "no speaker chosen") }
        return await reconnect.connectNow()
    }

    /// The attempt itself: pair and trust a new speaker, then `Connect`.
    func attemptConnection(to address: BluetoothAddress) async -> ReconnectController<ErasedClock>.AttemptResult {
        await holdingSleepDelay { await connectionAttempt(to: address) }
    }

    private func connectionAttempt(to address: BluetoothAddress) async -> ReconnectController<ErasedClock>.AttemptResult {
        guard let bluez else { return .failed(reason: "BlueZ is not reachable") }
        do {
            if let device = try await bluez.device(address) {
                if device.connected {
                    await speakerConnected(address)
                    return .connected
                }
                if !device.paired { try await bluez.pair(address) }
                if !device.trusted { try await bluez.setTrusted(address, true) }
            }
            try await timeboxedConnect(bluez, address)
            await speakerConnected(address)
            return .connected
        } catch let error as BlueZClientError where error.bluezError?.kind == .alreadyConnected {
            // Our cached view was stale (the link came up meanwhile): that is success.
            await speakerConnected(address)
            return .connected
        } catch {
            logger.info("connecting \(address) failed: \(error)")
            return .failed(reason: "\(error)")
        }
    }

    private func timeboxedConnect(_ bluez: any BlueZClient, _ address: BluetoothAddress) async throws {
        switch try await timeboxed(.seconds(10), clock: dependencies.clock, { try await bluez.connect(address) }) {
        case .finished: return
        case .timedOut: throw BlueZClientError.timedOut(operation: "Connect", after: .seconds(10))
        }
    }

    /// The link is up: remember the speaker, raise readiness, and (outside start-up) make
    /// playback ready again.
    func speakerConnected(_ address: BluetoothAddress) async {
        guard let target, target.address == address else { return }
        do { try await stateStore.recordConnection(to: address, name: target.name, at: dependencies.now()) } catch {
            logger.error("\(error.description)")
        }
        await raise(.speakerConnected)
        await setPhase(.connecting(speakerName: target.name))
        if lifecycle == .running, let playback = playback {
            do {
                // The output moves to the (re)connected speaker first, then a song the loss
                // paused goes on where it stopped. Ready also means the soundfont is loaded
                // (as in start-up); once preloaded this returns at once.
                try await playback.waitForAudioPath(speaker: address.description)
                try await playback.preloadSoundfont(configuration.soundfont)
                await playback.speakerBack()
                await raise(.playbackReady)
                await setPhase(.ready(speakerName: target.name))
            } catch {
                logger.warning("audio path to \(target.name) is not ready: \(error)")
            }
        } else if playback == nil {
            await setPhase(.ready(speakerName: target.name))
        }
    }

    func reconnectChanged(_ change: ReconnectController<ErasedClock>.Change, address: BluetoothAddress) async {
        guard let target, target.address == address else { return }
        // While the compatibility gate is closed (bluetoothd gone, no adapter) that is what the
        // user must hear: a retry countdown for the link that went down with it would hide it.
        if case .blocked = lifecycle { return }
        switch change {
        case .attempting: await setPhase(.connecting(speakerName: target.name))
        case .retryScheduled(let delay): await setPhase(.reconnecting(speakerName: target.name, retryIn: delay))
        case .holding: await setPhase(.heldByUser(speakerName: target.name))
        case .connected, .attemptFailed: break
        }
    }

    /// One discovery of `scan_seconds` on the injected clock; audio devices ranked best first.
    func discover() async throws -> [RankedCandidate] {
        try await holdingSleepDelay { try await discovery() }
    }

    private func discovery() async throws -> [RankedCandidate] {
        guard let bluez, let adapterAddress = adapter?.address else {
            throw SpeakerdError.rejected(name: SpeakerdBus.ErrorName.notReady, message: phase.statusLine)
        }
        try await bluez.startDiscovery(on: adapterAddress, filter: DiscoveryFilter.audioSinks)
        do { try await dependencies.clock.sleep(for: configuration.scanDuration) } catch {
            try? await bluez.stopDiscovery(on: adapterAddress)
            throw error
        }
        try? await bluez.stopDiscovery(on: adapterAddress)
        let known = await stateStore.knownSpeakers.map(\.address)
        return try await bluez.devices().filter { $0.audioSink.isOffered }.map { device in
            RankedCandidate(address: device.address, name: device.displayName, rssi: device.rssi.map(Int.init),
                            knownRank: known.firstIndex(of: device.address), trusted: device.trusted,
                            audioSink: device.audioSink.isOffered)
        }
    }
}
