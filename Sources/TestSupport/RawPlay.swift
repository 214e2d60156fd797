import DBus
import SpeakerdAPI

/// A raw `Play` call, as any client library could send it.
public func rawPlay(_ bus: DBusConnection, fd: Int32, name: String, timeout: Duration = .seconds(60)) async throws(DBusError) {
    _ = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                           method: "Play", arguments: [.unixFD(try DBusUnixFD(duplicating: fd)), .string(name), .bool(false)],
                           timeout: timeout)
}
