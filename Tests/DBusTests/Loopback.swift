import DBus
import TestSupport

/// A private bus with two connections: `server` exports objects, `client` calls them.
/// Calling our own exported object over a real dbus-daemon exercises both directions of
/// marshalling, dispatch and replies.
struct Loopback {
    let world: FakeBusWorld
    let server: DBusConnection
    let client: DBusConnection

    static let path: DBusObjectPath = "/com/speakerd/Test"
    static let interface = "com.speakerd.Test"

    static func start(exporting interfaces: [DBusInterface] = []) async throws -> Loopback {
        let world = try await FakeBusWorld.start(bluez: false)
        let server = try await world.connect()
        let client = try await world.connect()
        if !interfaces.isEmpty { try server.export(try DBusObject(interfaces: interfaces), at: path) }
        return Loopback(world: world, server: server, client: client)
    }

    /// Calls `method` of the test interface on the server's exported object.
    func call(_ method: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        try await client.call(destination: server.uniqueName, path: Self.path, interface: Self.interface,
                              method: method, arguments: arguments, timeout: timeout)
    }
}

/// An `Echo` method for one signature: returns its arguments unchanged.
func echo(_ name: String, _ signature: DBusSignature) -> DBusMethod {
    let arguments = signature.completeTypes.enumerated().map { DBusArgument("a\($0.offset)", $0.element) }
    return DBusMethod(name, inputs: arguments, outputs: arguments) { $0.arguments }
}
