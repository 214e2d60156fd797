/// Everything speakerd asks of BlueZ: the boundary between domain code and the D-Bus world.
///
/// Why a protocol: the daemon's start-up and reconnect logic is tested against `FakeBlueZClient`
/// in-process (fast, deterministic, with an injected clock), while `DBusBlueZClient` is tested against
/// python-dbusmock on a private bus. Devices and adapters are named by address everywhere, so
/// callers never hold an object path across an adapter re-plug or a bluetoothd restart.
///
/// Errors are `BlueZClientError`. Every method is cancellable: cancelling the calling task abandons
/// the D-Bus call (BlueZ may still finish it; the event stream tells what really happened).
public protocol BlueZClient: AnyObject, Sendable {
    /// The adapters BlueZ has now, in object-path order (hci0 first).
    func adapters() async throws -> [Adapter]
    /// Every device BlueZ knows, on every adapter.
    func devices() async throws -> [Device]
    /// Powers the adapter on (`Powered = true`); throws `.adapterBlocked` when rfkill blocks it.
    func powerOn(_ adapter: BluetoothAddress) async throws
    /// Sets our discovery filter and starts our own discovery session on the adapter.
    func startDiscovery(on adapter: BluetoothAddress, filter: DiscoveryFilter) async throws
    /// Stops our discovery session (other clients' sessions go on).
    func stopDiscovery(on adapter: BluetoothAddress) async throws
    /// `Device1.Connect`: all auto-connectable profiles.
    func connect(_ device: BluetoothAddress) async throws
    /// `Device1.ConnectProfile(uuid)`, e.g. `BlueZUUID.a2dpSink`.
    func connectProfile(_ device: BluetoothAddress, uuid: String) async throws
    /// `Device1.Pair`, answered by our NoInputNoOutput agent (Just Works).
    func pair(_ device: BluetoothAddress) async throws
    /// Sets `Trusted`, so the speaker may reconnect on its own and needs no authorisation.
    func setTrusted(_ device: BluetoothAddress, _ trusted: Bool) async throws
    /// `Device1.Disconnect`.
    func disconnect(_ device: BluetoothAddress) async throws
    /// `Adapter1.RemoveDevice`: forgets the pairing too.
    func removeDevice(_ device: BluetoothAddress) async throws
    /// A new subscription to everything that changes from now on. Ends when the client shuts down.
    func events() -> AsyncStream<BlueZEvent>
    /// Ends every event subscription and the client's own tasks (the daemon's shutdown).
    func shutDown() async
}

extension BlueZClient {
    /// The adapter speakerd uses when none is configured: the first powered one, else the first.
    public func defaultAdapter() async throws -> Adapter {
        let all = try await adapters()
        guard let adapter = all.first(where: \.powered) ?? all.first else { throw BlueZClientError.noAdapter }
        return adapter
    }

    /// The device with this address, if BlueZ knows it.
    public func device(_ address: BluetoothAddress) async throws -> Device? {
        try await devices().first { $0.address == address }
    }

    /// One device's events (as bluer offers per device): what the reconnect policy of one speaker
    /// watches. Adapter and bluetoothd events are not included; watch `events()` for those.
    public func events(for device: BluetoothAddress) -> AsyncFilterSequence<AsyncStream<BlueZEvent>> {
        events().filter { $0.deviceAddress == device }
    }

    /// Devices that may be offered in scan-and-pick, speakers first.
    public func audioSinkCandidates() async throws -> [Device] {
        try await devices().filter { $0.audioSink.isOffered }.sorted { lhs, rhs in
            // Definite sinks before possible ones, then the strongest signal.
            if lhs.audioSink.isDefinite != rhs.audioSink.isDefinite { return lhs.audioSink.isDefinite }
            return (lhs.rssi ?? .min) > (rhs.rssi ?? .min)
        }
    }
}
