import DBus
/// BlueALSA's PCMs read from D-Bus: `org.freedesktop.DBus.ObjectManager` at `/org/bluealsa` of
/// the `org.bluealsa` service (bluez-alsa 4 and later).
///
/// Each `pcmSets()` stream subscribes to InterfacesAdded/InterfacesRemoved and to the service's
/// owner *before* asking GetManagedObjects, so a PCM added in between is never missed. When
/// BlueALSA is not running (or restarts) the set is empty and is read again as soon as the
/// service has an owner: a restarted BlueALSA is picked up without restarting speakerd.
public struct BlueALSADBusPCMSource: BlueALSAPCMSource {
    public static let defaultService = "org.bluealsa"
    public static let managerPath: DBusObjectPath = "/org/bluealsa"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"

    public let connection: DBusConnection
    /// `org.bluealsa`, or `org.bluealsa.SUFFIX` for a BlueALSA started with `--dbus=SUFFIX`.
    public let service: String
    let callTimeout: Duration

    public init(connection: DBusConnection, service: String = defaultService, callTimeout: Duration = .seconds(5)) {
        self.connection = connection
        self.service = service
        self.callTimeout = callTimeout
    }

    /// What one of the subscriptions saw.
    private enum Event: Sendable {
        case owner(String?)
        case added(DBusObjectPath, [String: [String: DBusValue]])
        case removed(DBusObjectPath, [String])
    }

    public func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error> {
        let source = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await source.follow { continuation.yield($0 ?? []) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error> {
        let source = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await source.follow { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func volume(ofPCM path: String) -> (any SpeakerVolume)? {
        (try? DBusObjectPath(path)).map { BlueALSAPCMVolume(connection: connection, service: service, pcm: $0, callTimeout: callTimeout) }
    }

    /// `Delay` is a `q` in tenths of a millisecond (bluez-alsa's org.bluealsa.PCM1 API, 4.0 on).
    public func delay(ofPCM path: String) async -> Duration? {
        guard let pcm = try? DBusObjectPath(path),
              let reply = try? await connection.call(
                  destination: service, path: pcm, interface: "org.freedesktop.DBus.Properties", method: "Get",
                  arguments: [.string(BlueALSAPCM.interface), .string(BlueALSAPCM.Property.delay)], timeout: callTimeout),
              case let .uint16(tenths)? = reply.first?.unwrappingVariants
        else { return nil }
        return .microseconds(Int(tenths) * 100)
    }

    /// Keeps `yield` told of the full PCM set until cancelled or the bus fails.
    private func follow(_ yield: @escaping @Sendable ([BlueALSAPCM]?) -> Void) async throws {
        let rule = { (member: String) in
            DBusMatchRule(sender: service, path: Self.managerPath, interface: Self.objectManager, member: member)
        }
        let added = try await connection.signals(matching: rule("InterfacesAdded"))
        let removed = try await connection.signals(matching: rule("InterfacesRemoved"))
        let owners = try await connection.nameOwnerChanges(for: service)
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        // The subscriptions end when the consumer goes away: that ends the forwarding tasks below.
        try await withTaskCancellationHandler {
            try await forward(added: added, removed: removed, owners: owners, events: events, sink: sink, yield: yield)
        } onCancel: {
            added.cancel()
            removed.cancel()
            owners.cancel()
            sink.finish()
        }
    }

    private func forward(
        added: DBusSignalStream, removed: DBusSignalStream, owners: DBusNameOwnerStream,
        events: AsyncStream<Event>, sink: AsyncStream<Event>.Continuation,
        yield: @escaping @Sendable ([BlueALSAPCM]?) -> Void
    ) async throws {
        defer { added.cancel(); removed.cancel(); owners.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await owner in owners { sink.yield(.owner(owner)) }
                sink.finish() // The connection ended: so does the stream.
            }
            group.addTask {
                for await signal in added {
                    guard signal.arguments.count == 2, case let .objectPath(path) = signal.arguments[0] else { continue }
                    sink.yield(.added(path, Self.interfaces(signal.arguments[1])))
                }
                sink.finish()
            }
            group.addTask {
                for await signal in removed {
                    guard signal.arguments.count == 2, case let .objectPath(path) = signal.arguments[0],
                          case let .array(_, names) = signal.arguments[1].unwrappingVariants else { continue }
                    sink.yield(.removed(path, names.compactMap { if case let .string(name) = $0 { name } else { nil } }))
                }
                sink.finish()
            }
            defer { group.cancelAll() }
            var pcms: [DBusObjectPath: BlueALSAPCM] = [:]
            var running = false
            for await event in events {
                switch event {
                case let .owner(owner):
                    running = owner != nil
                    pcms = owner == nil ? [:] : try await managedPCMs()
                case let .added(path, interfaces):
                    guard let pcm = Self.pcm(at: path, interfaces: interfaces) else { continue }
                    pcms[path] = pcm
                case let .removed(path, interfaces):
                    guard interfaces.contains(BlueALSAPCM.interface) else { continue }
                    pcms[path] = nil
                }
                yield(running ? pcms.values.sorted { $0.path < $1.path } : nil)
            }
            try Task.checkCancellation()
            throw BlueALSAError.unavailable(reason: "the D-Bus connection to \(service) ended")
        }
    }

    /// GetManagedObjects, keeping the objects that are PCMs.
    private func managedPCMs() async throws -> [DBusObjectPath: BlueALSAPCM] {
        let reply = try await connection.call(destination: service, path: Self.managerPath, interface: Self.objectManager,
                                              method: "GetManagedObjects", timeout: callTimeout)
        guard let first = reply.first, case let .dictionary(_, _, objects) = first.unwrappingVariants else {
            throw BlueALSAError.unavailable(reason: "GetManagedObjects of \(service) returned \(reply.first?.signature.rawValue ?? "nothing"), expected a{oa{sa{sv}}}")
        }
        var pcms: [DBusObjectPath: BlueALSAPCM] = [:]
        for entry in objects {
            guard case let .objectPath(path) = entry.key,
                  let pcm = Self.pcm(at: path, interfaces: Self.interfaces(entry.value)) else { continue }
            pcms[path] = pcm
        }
        return pcms
    }

    /// `a{sa{sv}}` as a dictionary of property dictionaries.
    static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]] {
        guard case let .dictionary(_, _, entries) = value.unwrappingVariants else { return [:] }
        var result: [String: [String: DBusValue]] = [:]
        for entry in entries {
            guard case let .string(name) = entry.key, case let .dictionary(_, _, properties) = entry.value.unwrappingVariants else { continue }
            var values: [String: DBusValue] = [:]
            for property in properties {
                if case let .string(key) = property.key { values[key] = property.value.unwrappingVariants }
            }
            result[name] = values
        }
        return result
    }

    /// The PCM described by an object's interfaces, or nil if it has no well-formed PCM1.
    static func pcm(at path: DBusObjectPath, interfaces: [String: [String: DBusValue]]) -> BlueALSAPCM? {
        guard let properties = interfaces[BlueALSAPCM.interface],
              case let .objectPath(device)? = properties[BlueALSAPCM.Property.device],
              case let .string(transport)? = properties[BlueALSAPCM.Property.transport],
              case let .string(mode)? = properties[BlueALSAPCM.Property.mode]
        else { return nil }
        var running: Bool?
        if case let .bool(value)? = properties[BlueALSAPCM.Property.running] { running = value }
        var sampleRate: Int?
        if case let .uint32(rate)? = properties[BlueALSAPCM.Property.rate] ?? properties[BlueALSAPCM.Property.sampling], rate > 0 {
            sampleRate = Int(rate)
        }
        return BlueALSAPCM(path: path.rawValue, device: device.rawValue, transport: transport, mode: mode, running: running,
                           sampleRate: sampleRate)
    }
}
