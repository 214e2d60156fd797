import DBus
/// The `BlueZClient` operations: each resolves its target by address at call time, calls BlueZ
/// with a timeout measured on the injected clock, and turns D-Bus errors into `BlueZClientError`.
extension DBusBlueZClient {
    public func adapters() async throws -> [Adapter] {
        try requireBluetoothd()
        return await cache.adapters
    }

    public func devices() async throws -> [Device] {
        try requireBluetoothd()
        return await cache.devices
    }

    /// A controller that has just come back (btvirt restarted, a USB dongle plugged in) is powered
    /// by bluetoothd itself, and a power-on asked meanwhile is answered `Busy` (seen with real
    /// bluetoothd 5.66): tried again, `busyRetries` times `busyRetryDelay` apart, until the
    /// adapter is powered or stops being busy.
    public func powerOn(_ address: BluetoothAddress) async throws {
        var busyAnswers = 0
        while true {
            let (path, adapter) = try await adapter(address)
            if adapter.isBlocked { throw BlueZClientError.adapterBlocked(name: adapter.name) }
            if adapter.powered { return }
            do {
                try await setProperty("Powered", .bool(true), on: path, interface: BlueZInterface.adapter,
                                      operation: "Power on \(adapter.name)")
                return
            } catch BlueZClientError.bluez(let error, _) where error.message.lowercased().contains("rfkill") {
                throw BlueZClientError.adapterBlocked(name: adapter.name)
            } catch BlueZClientError.bluez(let error, let operation) where error.kind == .busy && busyAnswers < Self.busyRetries {
                busyAnswers += 1
                logger.info("\(operation): the adapter is busy; trying again in \(Self.busyRetryDelay)")
                try await clock.sleep(for: Self.busyRetryDelay)
            }
        }
    }

    static let busyRetries = 10
    static let busyRetryDelay = Duration.milliseconds(500)

    public func startDiscovery(on address: BluetoothAddress, filter: DiscoveryFilter) async throws {
        let (path, adapter) = try await adapter(address)
        var entries: [String: DBusValue] = [
            "Transport": .string(filter.transport.rawValue),
            "UUIDs": .strings(filter.uuids),
            "DuplicateData": .bool(filter.duplicateData),
        ]
        if let rssi = filter.rssiThreshold { entries["RSSI"] = .int16(rssi) }
        _ = try await bluezCall(path: path, interface: BlueZInterface.adapter, method: "SetDiscoveryFilter",
                                arguments: [.properties(entries)], operation: "Set the discovery filter on \(adapter.name)")
        do {
            _ = try await bluezCall(path: path, interface: BlueZInterface.adapter, method: "StartDiscovery",
                                    operation: "Start discovery on \(adapter.name)")
        } catch BlueZClientError.bluez(let error, _) where error.kind == .inProgress {
            // Our session is already running: starting it again is not an error for us.
        }
    }

    public func stopDiscovery(on address: BluetoothAddress) async throws {
        let (path, adapter) = try await adapter(address)
        do {
            _ = try await bluezCall(path: path, interface: BlueZInterface.adapter, method: "StopDiscovery",
                                    operation: "Stop discovery on \(adapter.name)")
        } catch BlueZClientError.bluez(let error, _) where error.kind == .failed && error.message.contains("No discovery started") {
            // Nothing of ours to stop: stopping is idempotent.
        }
    }

    public func connect(_ address: BluetoothAddress) async throws {
        let path = try await devicePath(address)
        _ = try await bluezCall(path: path, interface: BlueZInterface.device, method: "Connect",
                                timeout: configuration.connectTimeout, operation: "Connect to \(address)", device: address)
    }

    public func connectProfile(_ address: BluetoothAddress, uuid: String) async throws {
        let path = try await devicePath(address)
        _ = try await bluezCall(path: path, interface: BlueZInterface.device, method: "ConnectProfile",
                                arguments: [.string(uuid)], timeout: configuration.connectTimeout,
                                operation: "Connect profile \(uuid) of \(address)", device: address)
    }

    /// Pairs through our agent. Cancelling the calling task cancels the pairing in BlueZ too.
    public func pair(_ address: BluetoothAddress) async throws {
        let path = try await devicePath(address)
        agent.begin(address)
        defer { agent.end(address) }
        do {
            _ = try await bluezCall(path: path, interface: BlueZInterface.device, method: "Pair",
                                    timeout: configuration.pairTimeout, operation: "Pair with \(address)", device: address)
        } catch {
            if error is CancellationError || (error as? BlueZClientError).map({ if case .timedOut = $0 { true } else { false } }) == true {
                // Our task is cancelled, so the call goes from a fresh task that is not.
                let connection = self.connection
                await Task {
                    _ = try? await connection.call(destination: BlueZInterface.service, path: path, interface: BlueZInterface.device,
                                                   method: "CancelPairing", timeout: .seconds(2))
                }.value
            }
            throw error
        }
    }

    public func setTrusted(_ address: BluetoothAddress, _ trusted: Bool) async throws {
        let path = try await devicePath(address)
        try await setProperty("Trusted", .bool(trusted), on: path, interface: BlueZInterface.device,
                              operation: "\(trusted ? "Trust" : "Untrust") \(address)", device: address)
    }

    public func disconnect(_ address: BluetoothAddress) async throws {
        let path = try await devicePath(address)
        _ = try await bluezCall(path: path, interface: BlueZInterface.device, method: "Disconnect",
                                operation: "Disconnect \(address)", device: address)
    }

    public func removeDevice(_ address: BluetoothAddress) async throws {
        let path = try await devicePath(address)
        guard let adapterPath = BlueZPaths.adapterPath(ofDevice: path) else { throw BlueZClientError.unknownDevice(address) }
        _ = try await bluezCall(path: adapterPath, interface: BlueZInterface.adapter, method: "RemoveDevice",
                                arguments: [.objectPath(path)], operation: "Remove \(address)")
    }

    // MARK: - Resolution by address (never by a remembered path)

    private func devicePath(_ address: BluetoothAddress) async throws -> DBusObjectPath {
        try requireBluetoothd()
        guard let path = await cache.path(ofDevice: address) else { throw BlueZClientError.unknownDevice(address) }
        return path
    }

    private func adapter(_ address: BluetoothAddress) async throws -> (DBusObjectPath, Adapter) {
        try requireBluetoothd()
        guard let path = await cache.path(ofAdapter: address), let adapter = await cache.adapter(at: path) else {
            if await cache.adapters.isEmpty { throw BlueZClientError.noAdapter }
            throw BlueZClientError.unknownAdapter(address)
        }
        return (path, adapter)
    }

    // MARK: - Calls

    private func setProperty(_ name: String, _ value: DBusValue, on path: DBusObjectPath, interface: String, operation: String,
                             device: BluetoothAddress? = nil) async throws {
        _ = try await bluezCall(path: path, interface: BlueZInterface.properties, method: "Set",
                                arguments: [.string(interface), .string(name), .variant(value)], operation: operation, device: device)
    }

    /// One call to bluetoothd, bounded by `timeout` on our clock (the bus timeout is only a backstop).
    ///
    /// - Parameter device: the device the call is about. A device can vanish mid-call (removed,
    ///   out of range for good, its adapter unplugged): its object goes away, and the call either
    ///   gets an "unknown object/method" bus error or no answer at all. Both become
    ///   `.unknownDevice`, the second as soon as BlueZ reports the device removed.
    private func bluezCall(
        path: DBusObjectPath, interface: String, method: String, arguments: [DBusValue] = [],
        timeout: Duration? = nil, operation: String, device: BluetoothAddress? = nil
    ) async throws -> [DBusValue] {
        let limit = timeout ?? configuration.callTimeout
        let connection = self.connection
        let clock = self.clock
        // Subscribed before the call, so a removal while it is under way is never missed.
        let removals = device.map { _ in events() }
        return try await withThrowingTaskGroup(of: [DBusValue]?.self) { group in
            group.addTask {
                do throws(DBusError) {
                    return try await connection.call(
                        destination: BlueZInterface.service, path: path, interface: interface, method: method,
                        arguments: arguments, timeout: limit + .seconds(5))
                } catch {
                    throw Self.clientError(error, operation: operation, limit: limit, device: device)
                }
            }
            group.addTask {
                try await clock.sleep(for: limit)
                throw BlueZClientError.timedOut(operation: operation, after: limit)
            }
            if let device, let removals {
                group.addTask {
                    for await event in removals where event == .deviceRemoved(device) {
                        throw BlueZClientError.unknownDevice(device)
                    }
                    return nil // The event stream ended (shutting down): the call decides.
                }
            }
            defer { group.cancelAll() }
            while let outcome = try await group.next() {
                if let reply = outcome { return reply }
            }
            throw CancellationError()
        }
    }

    /// What a D-Bus failure means for a BlueZ operation (about `device`, when it is about one).
    static func clientError(_ error: DBusError, operation: String, limit: Duration, device: BluetoothAddress? = nil) -> any Error {
        switch error {
        case .remote(let name, let message):
            if let bluez = BlueZError(dbusName: name, message: message) { return BlueZClientError.bluez(bluez, operation: operation) }
            let vanished = [DBusError.Name.unknownObject, DBusError.Name.unknownMethod, DBusError.Name.unknownInterface]
            if let device, vanished.contains(name) { return BlueZClientError.unknownDevice(device) }
            if name == DBusError.Name.serviceUnknown || name == DBusError.Name.nameHasNoOwner {
                return BlueZClientError.bluetoothdNotRunning
            }
            return BlueZClientError.bus("\(operation): \(error)")
        case .cancelled:
            return CancellationError()
        case .timeout:
            return BlueZClientError.timedOut(operation: operation, after: limit)
        default:
            return BlueZClientError.bus("\(operation): \(error)")
        }
    }
}
