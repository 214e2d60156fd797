import BlueZ
import Logind
import SpeakerdAPI
/// BlueZ events and logind's sleep, handed to the core (``DaemonCore``): the link's are the link
/// owner's to judge; adapters and bluetoothd close and reopen the compatibility gate.
extension SpeakerdDaemon {
    /// An event the BlueZ watch reported.
    func handle(_ event: BlueZEvent) async {
        await run(.bluez(event, adapterInUse: features.bluez.adapter?.name))
    }

    /// The sleep delay lock, if the daemon has one (see ``SleepFeature``).
    var sleepInhibitor: SleepInhibitor? {
        get async { await features.sleep.inhibitor }
    }

    /// logind's `PrepareForSleep(start)` (the sleep feature reports it): hold still while
    /// asleep, reconnect shortly after.
    public func systemSleep(starting: Bool) async {
        await run(.systemSleep(starting: starting))
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
