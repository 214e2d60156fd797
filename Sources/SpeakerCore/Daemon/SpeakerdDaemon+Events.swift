import BlueZ
import Logind
import SpeakerdAPI
/// BlueZ events: the link's are the link owner's to judge; adapters and bluetoothd close and
/// reopen the compatibility gate.
extension SpeakerdDaemon {
    /// An event the BlueZ watch reported.
    func handle(_ event: BlueZEvent) async {
        // Losing the adapter or bluetoothd is recorded before the link hears of it: the link
        // going down is its consequence, and readiness taken in between would blame the
        // speaker ("connecting to JBL Flip 5…") for what bluetoothd did.
        switch event {
        case .adapterRemoved(let name, _) where name == features.bluez.adapter?.name:
            features.bluez.adapterGone()
            let problem = CompatibilityProblem.noAdapter(configured: configuration.adapter)
            lifecycle = .blocked(problem)
            await update(.bluetooth(.blocked(problem)))
        case .bluetoothdVanished:
            features.bluez.adapterGone()
            await link.attach(nil)
            lifecycle = .blocked(.noBlueZ)
            await update(.bluetooth(.blocked(.noBlueZ)))
        default:
            break
        }
        await link.observe(event, known: await stateStore.knownSpeakers)
        if let bluez = features.bluez.client, let connection = await features.bus.connection {
            await features.scan.announceCandidates(after: event, from: bluez, on: connection)
        }
        switch event {
        case .adapterAdded(let added):
            if case .blocked(.noAdapter) = lifecycle { await reopenGate(because: "adapter \(added.name) appeared") }
        case .adapterChanged(let changed):
            if case .blocked(.adapterBlocked) = lifecycle, !changed.isBlocked {
                await reopenGate(because: "adapter \(changed.name) was unblocked")
            }
        case .bluetoothdRestarted, .bluetoothdAppeared:
            if case .blocked = lifecycle { await reopenGate(because: "bluetoothd is back") }
        default:
            break
        }
    }

    /// The condition that closed the compatibility gate cleared: run start-up again, in-process.
    ///
    /// Start-up runs in a task of its own: its steps wait on BlueZ, whose events must keep
    /// flowing meanwhile (a speaker connecting, bluetoothd leaving again).
    func reopenGate(because reason: String) async {
        guard case .blocked = lifecycle else { return }
        logger.notice("\(reason); resuming start-up")
        lifecycle = .starting
        startup.runAgain { Task { [weak self] in await self?.runStartup(reason: reason) } }
    }

    /// The sleep delay lock, if the daemon has one (see ``SleepFeature``).
    var sleepInhibitor: SleepInhibitor? {
        get async { await features.sleep.inhibitor }
    }

    /// logind's `PrepareForSleep(start)` (the sleep feature reports it): hold still while
    /// asleep, reconnect shortly after.
    public func systemSleep(starting: Bool) async {
        logger.info(starting ? "system is going to sleep" : "system resumed; reconnecting shortly")
        await link.systemSleep(starting: starting)
    }

    /// The candidates of a discovery of `duration` (`scan_seconds` when nil), shared with any
    /// scan under way (see ``ScanFeature``).
    func discover(duration: Duration? = nil) async throws -> [RankedCandidate] {
        try await features.scan.discover(duration: duration) { [weak self] () async throws -> ScanFeature.Place in
            guard let self else { throw CancellationError() }
            return try await self.discoveryPlace()
        }
    }

    /// Where a new discovery runs: BlueZ and the adapter's address, or why there is none.
    private func discoveryPlace() throws -> (bluez: any BlueZClient, adapter: BluetoothAddress) {
        guard let bluez = features.bluez.client, let address = features.bluez.adapter?.address else {
            throw SpeakerdError.rejected(name: SpeakerdBus.ErrorName.notReady, message: phase.statusLine)
        }
        return (bluez, address)
    }
}
