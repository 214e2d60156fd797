import AsyncSignals
import BlueZ
/// An in-process `BlueZClient` for unit tests of domain code (the daemon's start-up, reconnect policy).
///
/// Why: the daemon's logic must be tested in milliseconds with an injected clock, without a bus.
/// The fake behaves like bluetoothd where it matters (errors BlueZ would send, events in BlueZ's
/// order, a Connect that can fail or hang) and records every call so a test can assert what was asked.
/// As with `DBusConnection.call`, a call made from a cancelled task never reaches it (`requireSendable`).
public actor FakeBlueZClient: BlueZClient {
    /// How the fake answers a connect-like call for one device.
    public enum Behaviour: Sendable, Equatable {
        /// Succeeds; the device becomes connected.
        case succeed
        /// Fails with this BlueZ error (e.g. `FakeBlueZClient.pageTimeout`).
        case fail(BlueZError)
        /// Never answers until the caller cancels: a speaker that stalls the link setup.
        case hang
    }

    /// A call the fake received, for assertions.
    public enum Call: Sendable, Equatable {
        case powerOn(BluetoothAddress)
        case startDiscovery(BluetoothAddress, DiscoveryFilter)
        case stopDiscovery(BluetoothAddress)
        case connect(BluetoothAddress)
        case connectProfile(BluetoothAddress, String)
        case pair(BluetoothAddress)
        case setTrusted(BluetoothAddress, Bool)
        case disconnect(BluetoothAddress)
        case removeDevice(BluetoothAddress)
    }

    /// What BlueZ says when a speaker is off: `Failed` with `br-connection-page-timeout`.
    public static let pageTimeout = BlueZError(kind: .failed, message: "br-connection-page-timeout")

    private enum Lifecycle { case running, bluetoothdDown, shutDown }

    private var lifecycle = Lifecycle.running
    private var adapterList: [Adapter] = []
    private var deviceList: [Device] = []
    private var behaviours: [BluetoothAddress: Behaviour] = [:]
    /// Speakers that refuse to pair (see `refusePairing`).
    private var refusingPairing: Set<BluetoothAddress> = []
    /// Devices whose link is only the one pairing brought up: no audio profile is connected on it
    /// until a `Connect` (which bluetoothd then answers with success, not "Already Connected").
    private var pairingLinks: Set<BluetoothAddress> = []
    private var blocked: Set<String> = []
    public private(set) var calls: [Call] = []
    private let broadcaster = Broadcaster<BlueZEvent>(bufferingNewest: 1024)
    /// Events emitted while held, in order: a slow signal path (see `holdEvents`).
    private var heldEvents: [BlueZEvent]?
    /// While set, a successful connect or disconnect answers only once it resolves: a slow reply
    /// path (see `holdAnswers`).
    private var answersHeld: HeldGate?

    public init(adapters: [Adapter] = [], devices: [Device] = []) {
        self.adapterList = adapters
        self.deviceList = devices
    }

    // MARK: - Scripting the world

    public func addAdapter(_ adapter: Adapter) {
        adapterList.append(adapter)
        emit(.adapterAdded(adapter))
    }

    /// Removes the adapter and, as bluetoothd does, every device on it (devices first).
    public func removeAdapter(named name: String) {
        guard let index = adapterList.firstIndex(where: { $0.name == name }) else { return }
        let adapter = adapterList.remove(at: index)
        for device in deviceList where device.adapterName == name {
            emit(.deviceRemoved(device.address))
        }
        deviceList.removeAll { $0.adapterName == name }
        emit(.adapterRemoved(name: adapter.name, address: adapter.address))
    }

    /// Marks the adapter rfkill-blocked (`PowerState` off-blocked).
    public func blockAdapter(named name: String) {
        blocked.insert(name)
        mutateAdapter(named: name) { $0.powered = false; $0.powerState = .offBlocked }
    }

    public func addDevice(_ device: Device) {
        deviceList.append(device)
        emit(.deviceAdded(device))
    }

    public func vanishDevice(_ address: BluetoothAddress) {
        deviceList.removeAll { $0.address == address }
        emit(.deviceRemoved(address))
    }

    public func updateDevice(_ address: BluetoothAddress, _ change: @Sendable (inout Device) -> Void) {
        guard let index = deviceList.firstIndex(where: { $0.address == address }) else { return }
        let wasConnected = deviceList[index].connected
        change(&deviceList[index])
        emit(.deviceChanged(deviceList[index]))
        if !wasConnected, deviceList[index].connected { emit(.connected(address)) }
        if wasConnected, !deviceList[index].connected { emit(.disconnected(address, .unspecified)) }
    }

    public func setBehaviour(_ behaviour: Behaviour, for address: BluetoothAddress) {
        behaviours[address] = behaviour
    }

    /// From now on the speaker refuses to pair, as real bluetoothd shows it: `Pair` brings up the
    /// link to pair over (`Connected` true, while `Paired` stays false), the speaker refuses the
    /// keys, `Pair` fails with AuthenticationFailed and the link goes down again.
    public func refusePairing(_ address: BluetoothAddress, _ refusing: Bool = true) {
        if refusing { refusingPairing.insert(address) } else { refusingPairing.remove(address) }
    }

    /// The speaker ends the link (or goes out of range), with BlueZ's reason.
    public func dropConnection(_ address: BluetoothAddress, reason: DisconnectReason) {
        guard let index = deviceList.firstIndex(where: { $0.address == address }), deviceList[index].connected else { return }
        deviceList[index].connected = false
        pairingLinks.remove(address)
        emit(.deviceChanged(deviceList[index]))
        emit(.disconnected(address, reason))
    }

    /// bluetoothd goes away; `start` brings it back with the given world (as if re-read from disk).
    /// Announced as `DBusBlueZClient` does: the cause, then every object that went with it.
    public func stopBluetoothd() {
        lifecycle = .bluetoothdDown
        emit(.bluetoothdVanished)
        for device in deviceList {
            if device.connected { emit(.disconnected(device.address, .unspecified)) }
            emit(.deviceRemoved(device.address))
        }
        for adapter in adapterList { emit(.adapterRemoved(name: adapter.name, address: adapter.address)) }
        adapterList.removeAll()
        deviceList.removeAll()
    }

    public func startBluetoothd(adapters: [Adapter], devices: [Device]) {
        lifecycle = .running
        adapterList = adapters
        deviceList = devices
        emit(.bluetoothdAppeared)
        for adapter in adapters { emit(.adapterAdded(adapter)) }
        for device in devices { emit(.deviceAdded(device)) }
        emit(.bluetoothdRestarted)
    }

    /// Ends every event subscription.
    public func shutDown() {
        lifecycle = .shutDown
        broadcaster.finish()
    }

    // MARK: - BlueZClient

    public func adapters() async throws -> [Adapter] {
        try requireRunning()
        return adapterList
    }

    public func devices() async throws -> [Device] {
        try requireRunning()
        return deviceList
    }

    public func powerOn(_ adapter: BluetoothAddress) async throws {
        try requireRunning()
        calls.append(.powerOn(adapter))
        guard let found = adapterList.first(where: { $0.address == adapter }) else {
            throw BlueZClientError.unknownAdapter(adapter)
        }
        if blocked.contains(found.name) { throw BlueZClientError.adapterBlocked(name: found.name) }
        mutateAdapter(named: found.name) { $0.powered = true; $0.powerState = $0.powerState.map { _ in .on } }
    }

    public func startDiscovery(on adapter: BluetoothAddress, filter: DiscoveryFilter) async throws {
        try requireRunning()
        calls.append(.startDiscovery(adapter, filter))
        let name = try adapterName(adapter)
        mutateAdapter(named: name) { $0.discovering = true }
    }

    public func stopDiscovery(on adapter: BluetoothAddress) async throws {
        try requireRunning()
        calls.append(.stopDiscovery(adapter))
        let name = try adapterName(adapter)
        mutateAdapter(named: name) { $0.discovering = false }
    }

    public func connect(_ device: BluetoothAddress) async throws {
        try requireSendable()
        calls.append(.connect(device))
        try await connectLike(device, operation: "Connect")
    }

    public func connectProfile(_ device: BluetoothAddress, uuid: String) async throws {
        try requireSendable()
        calls.append(.connectProfile(device, uuid))
        // bluetoothd has nothing to connect for a profile the device does not offer.
        guard try knownDevice(device).uuids.contains(where: { $0.lowercased() == uuid.lowercased() }) else {
            throw BlueZClientError.bluez(BlueZError(kind: .failed, message: "br-connection-profile-unavailable"), operation: "ConnectProfile")
        }
        try await connectLike(device, operation: "ConnectProfile")
    }

    public func pair(_ device: BluetoothAddress) async throws {
        try requireSendable()
        calls.append(.pair(device))
        let current = try knownDevice(device)
        if current.paired {
            throw BlueZClientError.bluez(BlueZError(kind: .alreadyExists, message: "Already Paired"), operation: "Pair")
        }
        // As bluetoothd does: the link to pair over comes up first (`Connected`), before the keys
        // are exchanged; it is the pairing's link, with no audio profile on it.
        updateDevice(device) { $0.connected = true }
        pairingLinks.insert(device)
        await Task.yield()
        if refusingPairing.contains(device) {
            pairingLinks.remove(device)
            dropConnection(device, reason: .authentication)
            throw BlueZClientError.bluez(BlueZError(kind: .authenticationFailed, message: "Authentication Failed"), operation: "Pair")
        }
        updateDevice(device) { $0.paired = true; $0.bonded = true }
        // bluetoothd then browses the speaker's services and answers `Pair` only after: a client
        // sees the link up and the speaker paired well before the answer comes (about 0.3 s in
        // the real-Bluetooth guest; 50 ms here, real time, so the signals are handled meanwhile).
        try? await Task.sleep(for: .milliseconds(50))
    }

    public func setTrusted(_ device: BluetoothAddress, _ trusted: Bool) async throws {
        try requireSendable()
        calls.append(.setTrusted(device, trusted))
        _ = try knownDevice(device)
        updateDevice(device) { $0.trusted = trusted }
    }

    public func disconnect(_ device: BluetoothAddress) async throws {
        try requireSendable()
        calls.append(.disconnect(device))
        let current = try knownDevice(device)
        guard current.connected else {
            throw BlueZClientError.bluez(BlueZError(kind: .notConnected, message: "Not Connected"), operation: "Disconnect")
        }
        dropConnection(device, reason: .local)
        if let answersHeld { await answersHeld.wait() }
    }

    public func removeDevice(_ device: BluetoothAddress) async throws {
        try requireRunning()
        calls.append(.removeDevice(device))
        _ = try knownDevice(device)
        vanishDevice(device)
    }

    public nonisolated func events() -> AsyncStream<BlueZEvent> {
        broadcaster.subscribe()
    }

    /// From now on, events wait (in order) until `releaseEvents()`, while calls still answer:
    /// BlueZ's signals and its method replies reach a client by different paths, so a reply can
    /// be read before signals BlueZ sent ahead of it.
    public func holdEvents() {
        if heldEvents == nil { heldEvents = [] }
    }

    /// From now on, a successful connect or disconnect does its work (its events go out) but
    /// answers only at `releaseAnswers()`: the reverse of `holdEvents`, BlueZ's signals read
    /// before its reply.
    public func holdAnswers() {
        if answersHeld == nil { answersHeld = HeldGate() }
    }

    /// Lets the held answers through and stops holding.
    public func releaseAnswers() {
        answersHeld?.open()
        answersHeld = nil
    }

    /// Delivers the held events, in the order they happened, and stops holding.
    public func releaseEvents() {
        let events = heldEvents ?? []
        heldEvents = nil
        for event in events { broadcaster.publish(event) }
    }

    // MARK: - Helpers

    private func emit(_ event: BlueZEvent) {
        if heldEvents != nil { heldEvents?.append(event) } else { broadcaster.publish(event) }
    }

    private func connectLike(_ address: BluetoothAddress, operation: String) async throws {
        let current = try knownDevice(address)
        switch behaviours[address] ?? .succeed {
        case .succeed:
            if current.connected, pairingLinks.remove(address) != nil {
                return  // the pairing's link: its profiles are connected now
            }
            if current.connected {
                throw BlueZClientError.bluez(BlueZError(kind: .alreadyConnected, message: "Already Connected"), operation: operation)
            }
            updateDevice(address) { $0.connected = true }
            if let answersHeld { await answersHeld.wait() }
        case .fail(let error):
            throw BlueZClientError.bluez(error, operation: operation)
        case .hang:
            // An AsyncStream that never yields: iteration ends only when the caller's task is cancelled.
            let (never, keepAlive) = AsyncStream.makeStream(of: Never.self)
            for await _ in never {}
            keepAlive.finish()
            throw CancellationError()
        }
    }

    /// A call that asks bluetoothd to act: it must be running, and, as with `DBusConnection.call`,
    /// a call made from a cancelled task is never sent.
    private func requireSendable() throws {
        try requireRunning()
        try Task.checkCancellation()
    }

    private func requireRunning() throws {
        switch lifecycle {
        case .running: return
        case .bluetoothdDown, .shutDown: throw BlueZClientError.bluetoothdNotRunning
        }
    }

    private func knownDevice(_ address: BluetoothAddress) throws -> Device {
        guard let device = deviceList.first(where: { $0.address == address }) else {
            throw BlueZClientError.unknownDevice(address)
        }
        return device
    }

    private func adapterName(_ address: BluetoothAddress) throws -> String {
        guard let adapter = adapterList.first(where: { $0.address == address }) else {
            throw BlueZClientError.unknownAdapter(address)
        }
        return adapter.name
    }

    private func mutateAdapter(named name: String, _ change: (inout Adapter) -> Void) {
        guard let index = adapterList.firstIndex(where: { $0.name == name }) else { return }
        change(&adapterList[index])
        emit(.adapterChanged(adapterList[index]))
    }
}
