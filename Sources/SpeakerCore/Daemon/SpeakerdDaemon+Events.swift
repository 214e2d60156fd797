/// BlueZ events: the speaker dropping and coming back, adapters, bluetoothd restarts.
extension SpeakerdDaemon {
    func startEventLoop() {
        guard let bluez, eventTask == nil else { return }
        let events = bluez.events()
        eventTask = Task { [weak self] in
            for await event in events {
                await self?.handle(event)
            }
        }
    }

    func handle(_ event: BlueZEvent) async {
        switch event {
        case .disconnected(let address, let reason) where address == target?.address:
            await drop(.adapter)
            await playback?.speakerLost()
            await reconnect?.handle(.linkLost(Self.linkLossReason(reason)))
        case .connected(let address) where address == target?.address:
            await reconnect?.handle(.connected)
            await speakerConnected(address)
        case .deviceAdded(let device), .deviceChanged(let device):
            // Appearing, or an RSSI seen: the speaker is in reach again.
            if device.address == target?.address, !device.connected { await reconnect?.handle(.deviceSeen) }
        case .adapterAdded(let added):
            if case .blocked(.noAdapter) = lifecycle { await reopenGate(because: "adapter \(added.name) appeared") }
        case .adapterChanged(let changed):
            if case .blocked(.adapterBlocked) = lifecycle, !changed.isBlocked {
                await reopenGate(because: "adapter \(changed.name) was unblocked")
            } else if changed.name == adapter?.name, changed.powered {
                await reconnect?.handle(.deviceSeen)
            }
        case .adapterRemoved(let name, _) where name == adapter?.name:
            adapter = nil
            await drop(.bus)
            lifecycle = .blocked(.noAdapter(configured: configuration.adapter))
            await setPhase(.blocked(.noAdapter(configured: configuration.adapter)))
        case .bluetoothdVanished:
            adapter = nil
            await drop(.bus)
            await playback?.speakerLost()
            lifecycle = .blocked(.noBlueZ)
            await setPhase(.blocked(.noBlueZ))
        case .bluetoothdRestarted, .bluetoothdAppeared:
            if case .blocked = lifecycle { await reopenGate(because: "bluetoothd is back") }
        default:
            break
        }
    }

    /// The condition that closed the compatibility gate cleared: run start-up again, in-process.
    func reopenGate(because reason: String) async {
        guard case .blocked = lifecycle else { return }
        logger.notice("\(reason); resuming start-up")
        await runStartup()
    }

    /// logind's `PrepareForSleep(start)`: hold still while asleep, reconnect shortly after.
    public func systemSleep(starting: Bool) async {
        logger.info(starting ? "system is going to sleep" : "system resumed; reconnecting shortly")
        await reconnect?.handle(starting ? .preparingForSleep : .resumedFromSleep)
    }

    /// The reconnect policy's state for the current speaker (for tests and diagnostics).
    public var reconnectState: ReconnectPolicy<ErasedClock>.State? {
        get async { await reconnect?.state }
    }

    static func linkLossReason(_ reason: DisconnectReason) -> ReconnectPolicy<ErasedClock>.LinkLossReason {
        switch reason {
        case .timeout: .timeout
        case .remote, .authentication: .remote
        case .local: .local
        case .suspend, .unknown, .unspecified, .other: .unspecified
        }
    }
}
