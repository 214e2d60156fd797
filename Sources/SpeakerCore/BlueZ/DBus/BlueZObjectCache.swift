import DBus
/// BlueZ's objects as we last heard of them: built from `GetManagedObjects`, then kept current by
/// `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged`.
///
/// Why signals are the truth: a signal is what bluetoothd says happened, while a stored property
/// may lag (python-dbusmock's stock `Device1.Connect` emits `Connected = true` and keeps `false`).
/// The raw property bags are kept per path and typed views decoded on demand, so a partial
/// `PropertiesChanged` merges into what we know. Each mutation returns the `BlueZEvent`s it means,
/// so the client can tell subscribers exactly what changed.
actor BlueZObjectCache {
    /// What one mutation meant: events for subscribers now, and devices whose only change was
    /// noise (RSSI, TxPower, ManufacturerData) that the client coalesces before announcing.
    struct Update: Sendable {
        var events: [BlueZEvent] = []
        var noisyDevices: [BluetoothAddress] = []
    }

    private struct Entry {
        var interfaces: [String: [String: DBusValue]]
    }

    private var objects: [DBusObjectPath: Entry] = [:]
    /// Reasons from `Device1.Disconnected`, waiting for the `Connected = false` that follows.
    private var pendingDisconnectReasons: [DBusObjectPath: DisconnectReason] = [:]
    /// Properties that arrived with the wrong type, for diagnostics (`composer-cli doctor`).
    private(set) var decodingProblems: [DBusError] = []

    init() {}

    // MARK: - Views

    /// Where the adapters are now, in path order (for the compatibility check's introspection).
    var adapterPaths: [DBusObjectPath] {
        objects.keys.sorted().filter { objects[$0]?.interfaces[BlueZInterface.adapter] != nil }
    }

    /// Adapters in path order (hci0 before hci1).
    var adapters: [Adapter] {
        objects.keys.sorted().compactMap { path in
            objects[path]?.interfaces[BlueZInterface.adapter].map { Adapter(path: path, properties: $0) }
        }
    }

    /// Devices whose adapter is present. Orphans (their adapter was removed without them, as
    /// bluetoothd may do when it crashes) are not shown.
    var devices: [Device] {
        objects.keys.sorted().compactMap(device(at:))
    }

    func device(at path: DBusObjectPath) -> Device? {
        guard let properties = objects[path]?.interfaces[BlueZInterface.device],
              let adapterPath = BlueZPaths.adapterPath(ofDevice: path),
              objects[adapterPath]?.interfaces[BlueZInterface.adapter] != nil
        else { return nil }
        return Device(path: path, properties: properties)
    }

    /// Where the device with this address lives now. With two adapters seeing the same device,
    /// the one on a powered adapter wins. Looked up fresh on every call, never remembered.
    func path(ofDevice address: BluetoothAddress) -> DBusObjectPath? {
        let candidates = objects.keys.sorted().filter { device(at: $0)?.address == address }
        return candidates.first { adapterIsPowered(BlueZPaths.adapterPath(ofDevice: $0)) } ?? candidates.first
    }

    func path(ofAdapter address: BluetoothAddress) -> DBusObjectPath? {
        objects.keys.sorted().first { path in
            objects[path]?.interfaces[BlueZInterface.adapter].map { Adapter(path: path, properties: $0).address == address } ?? false
        }
    }

    func adapter(at path: DBusObjectPath) -> Adapter? {
        objects[path]?.interfaces[BlueZInterface.adapter].map { Adapter(path: path, properties: $0) }
    }

    private func adapterIsPowered(_ path: DBusObjectPath?) -> Bool {
        guard let path else { return false }
        return adapter(at: path)?.powered ?? false
    }

    // MARK: - Mutations

    /// Replaces everything with a `GetManagedObjects` reply; returns the differences as events.
    func load(_ managed: [DBusObjectPath: [String: [String: DBusValue]]]) -> Update {
        let before = snapshot()
        objects = managed.mapValues { Entry(interfaces: $0) }
        pendingDisconnectReasons.removeAll()
        for entry in objects.values { for properties in entry.interfaces.values { recordProblems(in: properties) } }
        return difference(from: before, to: snapshot())
    }

    /// bluetoothd is gone: forget everything, report what disappeared.
    func clear() -> Update {
        let before = snapshot()
        objects.removeAll()
        pendingDisconnectReasons.removeAll()
        return difference(from: before, to: snapshot())
    }

    /// The path and everything below it: an adapter's appearance or removal changes its devices too.
    private func family(of path: DBusObjectPath) -> Set<DBusObjectPath> {
        var result: Set<DBusObjectPath> = [path]
        for child in objects.keys where child.rawValue.hasPrefix(path.rawValue + "/") { result.insert(child) }
        return result
    }

    func interfacesAdded(at path: DBusObjectPath, _ interfaces: [String: [String: DBusValue]]) -> Update {
        let scope = family(of: path)
        let before = snapshot(scope)
        var entry = objects[path] ?? Entry(interfaces: [:])
        for (name, properties) in interfaces {
            entry.interfaces[name, default: [:]].merge(properties) { _, new in new }
        }
        objects[path] = entry
        for properties in interfaces.values { recordProblems(in: properties) }
        return difference(from: before, to: snapshot(scope))
    }

    func interfacesRemoved(at path: DBusObjectPath, _ interfaces: [String]) -> Update {
        let scope = family(of: path)
        let before = snapshot(scope)
        if var entry = objects[path] {
            for name in interfaces { entry.interfaces.removeValue(forKey: name) }
            objects[path] = entry.interfaces.isEmpty ? nil : entry
        }
        if interfaces.contains(BlueZInterface.adapter) {
            // The adapter is gone, so are its devices, whether or not BlueZ said so first.
            for child in objects.keys where child.rawValue.hasPrefix(path.rawValue + "/") {
                objects.removeValue(forKey: child)
            }
        }
        return difference(from: before, to: snapshot(scope))
    }

    func propertiesChanged(at path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String]) -> Update {
        guard objects[path]?.interfaces[interface] != nil else { return Update() }
        let scope: Set<DBusObjectPath> = [path]
        let before = snapshot(scope)
        objects[path]!.interfaces[interface]!.merge(changed) { _, new in new }
        for name in invalidated { objects[path]!.interfaces[interface]!.removeValue(forKey: name) }
        recordProblems(in: changed)
        return difference(from: before, to: snapshot(scope))
    }

    /// `Device1.Disconnected(reason, message)`: remembered until `Connected` turns false.
    func disconnectedSignal(at path: DBusObjectPath, reason: DisconnectReason) {
        pendingDisconnectReasons[path] = reason
    }

    // MARK: - Differences

    private struct Snapshot {
        var adapters: [DBusObjectPath: Adapter] = [:]
        var devices: [DBusObjectPath: Device] = [:]
    }

    /// Typed views of `paths` (all objects when nil). Decoding is scoped so an RSSI burst costs
    /// one device's decoding per signal, not the whole cache's.
    private func snapshot(_ paths: Set<DBusObjectPath>? = nil) -> Snapshot {
        var result = Snapshot()
        for path in paths ?? Set(objects.keys) {
            if let adapter = adapter(at: path) { result.adapters[path] = adapter }
            if let device = device(at: path) { result.devices[path] = device }
        }
        return result
    }

    /// Events in a meaningful order: adapters appear before their devices and vanish after them.
    private func difference(from old: Snapshot, to new: Snapshot) -> Update {
        var events: [BlueZEvent] = []
        var noisy: [BluetoothAddress] = []
        for path in new.adapters.keys.sorted() {
            let adapter = new.adapters[path]!
            if let previous = old.adapters[path] {
                if previous != adapter { events.append(.adapterChanged(adapter)) }
            } else {
                events.append(.adapterAdded(adapter))
            }
        }
        for path in new.devices.keys.sorted() {
            let device = new.devices[path]!
            guard let previous = old.devices[path] else {
                events.append(.deviceAdded(device))
                if device.connected { events.append(.connected(device.address)) }
                continue
            }
            guard previous != device else { continue }
            if previous.withoutNoise == device.withoutNoise {
                noisy.append(device.address)
                continue
            }
            events.append(.deviceChanged(device))
            if !previous.connected, device.connected {
                pendingDisconnectReasons.removeValue(forKey: path)
                events.append(.connected(device.address))
            } else if previous.connected, !device.connected {
                let reason = pendingDisconnectReasons.removeValue(forKey: path) ?? .unspecified
                events.append(.disconnected(device.address, reason))
            }
        }
        for path in old.devices.keys.sorted() where new.devices[path] == nil {
            let device = old.devices[path]!
            if device.connected { events.append(.disconnected(device.address, .unspecified)) }
            events.append(.deviceRemoved(device.address))
        }
        for path in old.adapters.keys.sorted() where new.adapters[path] == nil {
            let adapter = old.adapters[path]!
            events.append(.adapterRemoved(name: adapter.name, address: adapter.address))
        }
        return Update(events: events, noisyDevices: noisy)
    }

    /// Notes mistyped properties (tried against both tables: names do not collide in ways that matter).
    private func recordProblems(in properties: [String: DBusValue]) {
        var device = Device(address: BluetoothAddress(displayOrder: [0, 0, 0, 0, 0, 1]))
        var adapter = Adapter(name: "", address: nil)
        let problems = Device.properties.apply(properties, to: &device) + Adapter.properties.apply(properties, to: &adapter)
        guard !problems.isEmpty else { return }
        decodingProblems += problems
        if decodingProblems.count > 64 { decodingProblems.removeFirst(decodingProblems.count - 64) }
    }
}

extension Device {
    /// The device minus the properties that change many times a second during discovery.
    var withoutNoise: Device {
        var copy = self
        copy.rssi = nil
        copy.txPower = nil
        copy.manufacturerData = [:]
        return copy
    }
}
