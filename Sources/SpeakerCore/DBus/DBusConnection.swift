internal import CDBus
import Synchronization

/// A private connection to a message bus: async method calls, signal streams, bus-name
/// ownership and exported objects, driven by one I/O thread.
///
/// Dropping the last reference closes the connection (as does `close()`): pending calls fail
/// with `DBusError.disconnected`, signal streams end, exported objects disappear.
public final class DBusConnection: Sendable {
    /// Our unique name on the bus, e.g. `:1.42`.
    public let uniqueName: String
    /// The address we connected to.
    public let address: String
    let loop: DBusEventLoop
    let router: DBusSignalRouter
    let exports: DBusExportRegistry

    private init(uniqueName: String, address: String, loop: DBusEventLoop, router: DBusSignalRouter, exports: DBusExportRegistry) {
        self.uniqueName = uniqueName
        self.address = address
        self.loop = loop
        self.router = router
        self.exports = exports
    }

    deinit { loop.close() }

    /// Connects and registers with the bus. Never blocks the calling task's thread: the socket
    /// connection and the Hello exchange happen on the connection's own I/O thread.
    public static func connect(_ bus: BusAddress) async throws(DBusError) -> DBusConnection {
        let address = try bus.resolve()
        let router = DBusSignalRouter()
        let exports = DBusExportRegistry()
        let (loop, name) = try await DBusEventLoop.open(address: address, handler: { message, loop in
            switch message.kind {
            case DBusMessageKind.signal:
                if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                    router.closeAll()
                } else {
                    if exports.watchesCallers.load(ordering: .relaxed), let left = DBusCallerWatch.callerWhoLeft(message) { exports.pending.senderLeft(left) }
                    router.deliver(message)
                }
                return false
            case DBusMessageKind.methodCall:
                return exports.handle(message, loop: loop)
            default:
                return false
            }
        }, onClosed: {
            router.closeAll()
            exports.pending.cancelAll()
        })
        return DBusConnection(uniqueName: name, address: address, loop: loop, router: router, exports: exports)
    }

    /// Closes the connection now rather than when the last reference goes away.
    public func close() { loop.close() }

    /// Whether the connection has been closed or lost.
    public var isConnected: Bool { !loop.isDisconnected }

    /// Whether this connection can pass unix file descriptors (`h` values).
    public var canPassFileDescriptors: Bool {
        get async {
            await withCheckedContinuation { continuation in
                loop.perform { connection in
                    continuation.resume(returning: connection.map { dbus_connection_can_send_type($0, DBusTypeCode.unixFD) != 0 } ?? false)
                }
            }
        }
    }

    /// Calls a method and returns its reply's values.
    ///
    /// - Throws: `DBusError.remote` for an error reply (name and message kept), `.timeout` when
    ///   no reply comes within `timeout`, `.cancelled` when the calling task is cancelled (the
    ///   pending call is dropped), `.disconnected`, or `.invalidArgument` for a bad name or value.
    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, method: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        try await callReturningMessage(destination: destination, path: path, interface: interface, method: method,
                                       arguments: arguments, timeout: timeout).arguments
    }

    /// `call`, keeping the reply message (for its serial).
    func callReturningMessage(
        destination: String?, path: DBusObjectPath, interface: String?, method: String,
        arguments: [DBusValue], timeout: Duration
    ) async throws(DBusError) -> DBusMessage {
        let message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface, method: method)
        try message.append(arguments)
        let millis = Self.milliseconds(timeout)
        let reply: DBusMessage
        do {
            reply = try await DBusPendingReply.send(message, timeoutMillis: millis, on: loop)
        } catch let error as DBusError {
            throw error
        } catch {
            throw .cancelled
        }
        guard reply.kind == DBusMessageKind.error else { return reply }
        let remote = reply.remoteError
        if case .remote(let name, _) = remote, name == DBusError.Name.noReply, reply.sender == nil {
            // libdbus's own reply: the timeout expired, or the connection dropped meanwhile.
            throw loop.isDisconnected ? .disconnected : .timeout(method: "\(interface.map { $0 + "." } ?? "")\(method)", milliseconds: Int(millis))
        }
        throw remote
    }

    /// A call to the bus daemon itself (`org.freedesktop.DBus`).
    public func callBus(_ method: String, _ arguments: [DBusValue]) async throws(DBusError) -> [DBusValue] {
        try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                       interface: "org.freedesktop.DBus", method: method, arguments: arguments)
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        if millis.overflow { return Int32.max - 1 }
        return Int32(clamping: millis.partialValue + attoseconds / 1_000_000_000_000_000)
    }
}
