#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// speakerd's API: what `composer-cli` asks, answered from the coordinator's state.
extension SpeakerdDaemon: SpeakerdControl {
    public func status() async throws(SpeakerdError) -> StatusReport { await currentStatus() }

    public func startup() async throws(SpeakerdError) -> StartupReport {
        guard let lastTimeline else {
            throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: "start-up is still running; ask again in a moment")
        }
        return StartupReport(lastTimeline)
    }

    public func scan() async throws(SpeakerdError) -> ScanReport {
        do {
            lastScan = try await discover()
        } catch let error as SpeakerdError {
            throw error
        } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "scan failed: \(error)")
        }
        return CandidateRanking.report(lastScan)
    }

    public func speakers() async throws(SpeakerdError) -> SpeakersReport {
        let formatter = Date.ISO8601FormatStyle()  // 2026-11-21T14:53:03Z, UTC
        let connected = gate.isReached(.speakerConnected) ? target?.address : nil
        return SpeakersReport(speakers: await stateStore.knownSpeakers.map {
            .init(address: $0.address.description, name: $0.name, connected: $0.address == connected,
                  lastConnected: formatter.format($0.lastConnected))
        })
    }

    public func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport {
        guard let bluez else { throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: phase.statusLine) }
        let known = await stateStore.knownSpeakers
        guard let chosen = address ?? target?.address ?? known.first?.address else {
            throw .rejected(name: SpeakerdBus.ErrorName.noSpeaker,
                            message: "no speaker known yet: run 'composer-cli scan', then 'composer-cli connect ADDRESS'")
        }
        let device: Device?
        do { device = try await bluez.device(chosen) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "\(error)")
        }
        guard let device else {
            throw .rejected(name: SpeakerdBus.ErrorName.unknownDevice,
                            message: "BlueZ does not know \(chosen): put the speaker in pairing mode and run 'composer-cli scan'")
        }
        let name = known.first { $0.address == chosen }?.name ?? device.displayName
        await setTarget(chosen, name: name)
        if case .failed(let reason) = await connectTarget() {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "\(name) (\(chosen)) did not connect: \(reason)")
        }
        return await currentStatus()
    }

    public func disconnect() async throws(SpeakerdError) -> StatusReport {
        guard let target, let bluez else {
            throw .rejected(name: SpeakerdBus.ErrorName.noSpeaker, message: "no speaker is connected")
        }
        await reconnect?.handle(.userDisconnected)
        await playback?.stop()
        do { try await bluez.disconnect(target.address) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "disconnecting \(target.name) failed: \(error)")
        }
        await drop(.adapter)
        await setPhase(.heldByUser(speakerName: target.name))
        return await currentStatus()
    }

    public func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport {
        if target?.address == address {
            await reconnect?.handle(.targetCleared)
            if gate.isReached(.speakerConnected) { try? await bluez?.disconnect(address) }
            await reconnect?.shutdown()
            reconnect = nil
            target = nil
            await drop(.adapter)
            await setPhase(.waitingForPick)
        }
        let removed: Bool
        do { removed = try await stateStore.forget(address) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "\(error)")
        }
        guard removed else {
            throw .rejected(name: SpeakerdBus.ErrorName.unknownDevice, message: "\(address) is not a known speaker")
        }
        try? await bluez?.removeDevice(address)
        return try await speakers()
    }

    /// Plays the song in `request`, taking ownership of `request.file`: it is closed whatever
    /// happens, so an in-process caller must not close it too (the number may be reused by then).
    /// The D-Bus object hands over a duplicate of the descriptor the client sent.
    public func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        guard let playback = playback else {
            try? request.file.close()
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: DaemonOperationError.noPlaybackEngine.description)
        }
        // The playback side reads and checks the song first (a broken file fails at once), then
        // waits in the readiness gate for at most the play timeout.
        do {
            try await playback.play(file: request.file, displayName: request.displayName, queue: request.queue)
        } catch let error as PlaybackServiceError {
            throw .rejected(name: Self.errorName(for: error), message: error.description)
        } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.invalidFile, message: "\(request.displayName): \(error)")
        }
        // A queued song leaves the status line on the one playing now.
        await playbackChanged(await playback.snapshot())
        return await currentStatus()
    }

    /// The D-Bus error name a playback failure is reported under.
    static func errorName(for error: PlaybackServiceError) -> String {
        switch error {
        case .invalidSong: SpeakerdBus.ErrorName.invalidFile
        case .notReady, .notStartedYet: SpeakerdBus.ErrorName.notReady
        case .replaced, .stoppedBeforeStart, .cancelled, .startFailed, .nothingPlaying, .shuttingDown:
            SpeakerdBus.ErrorName.failed
        }
    }

    public func stop() async throws(SpeakerdError) -> StatusReport {
        await playback?.stop()
        if let target, gate.isReached(.playbackReady) { await setPhase(.ready(speakerName: target.name)) }
        return await currentStatus()
    }

    public func pause() async throws(SpeakerdError) -> StatusReport {
        do { try await playback?.pause() } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "\(error)")
        }
        await publish()
        return await currentStatus()
    }

    public func resume() async throws(SpeakerdError) -> StatusReport {
        do { try await playback?.resume() } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "\(error)")
        }
        await publish()
        return await currentStatus()
    }
}
