import DBus
import CDBus
import Foundation

/// The floor: the same echo round trips written directly against libdbus-1, plus the echo
/// server both clients call (a blocking libdbus loop on its own thread, so the server costs
/// the same for both).
enum RawLibdbus {
    static func connect(_ address: String) throws -> OpaquePointer {
        dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error), dbus_bus_register(connection, &error) != 0 else {
            throw BenchError("raw connect to \(address) failed: \(error.message.map { String(cString: $0) } ?? "?")")
        }
        return connection
    }

    static func uniqueName(_ connection: OpaquePointer) -> String {
        String(cString: dbus_bus_get_unique_name(connection))
    }

    /// Starts the echo server: `Echo(u) -> u` at /bench, interface com.speakerd.Bench.
    static func startEchoServer(_ address: String) throws -> String {
        let connection = try connect(address)
        dbus_connection_add_filter(connection, { connection, message, _ in
            guard let message, dbus_message_is_method_call(message, "com.speakerd.Bench", "Echo") != 0 else {
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }
            var iter = DBusMessageIter()
            var value: UInt32 = 0
            if dbus_message_iter_init(message, &iter) != 0 { dbus_message_iter_get_basic(&iter, &value) }
            let reply = dbus_message_new_method_return(message)
            var out = DBusMessageIter()
            dbus_message_iter_init_append(reply, &out)
            dbus_message_iter_append_basic(&out, Int32(UInt8(ascii: "u")), &value)
            dbus_connection_send(connection, reply, nil)
            dbus_message_unref(reply)
            return DBUS_HANDLER_RESULT_HANDLED
        }, nil, nil)
        let name = uniqueName(connection)
        let box = ConnectionBox(connection)
        Thread.detachNewThread {
            while dbus_connection_read_write_dispatch(box.connection, -1) != 0 {}
        }
        return name
    }

    static func echoCall(_ destination: String, _ value: UInt32) -> OpaquePointer {
        let message = dbus_message_new_method_call(destination, "/bench", "com.speakerd.Bench", "Echo")!
        var iter = DBusMessageIter()
        var v = value
        dbus_message_iter_init_append(message, &iter)
        dbus_message_iter_append_basic(&iter, Int32(UInt8(ascii: "u")), &v)
        return message
    }

    /// One call in flight: send_with_reply_and_block in a loop.
    static func blocking(_ connection: OpaquePointer, destination: String, calls: Int) -> [Double] {
        var latencies: [Double] = []
        latencies.reserveCapacity(calls)
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        for i in 0..<calls {
            let start = DispatchTime.now().uptimeNanoseconds
            let message = echoCall(destination, UInt32(i))
            let reply = dbus_connection_send_with_reply_and_block(connection, message, -1, &error)
            dbus_message_unref(message)
            guard let reply else { fatalError("raw call failed") }
            dbus_message_unref(reply)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        return latencies
    }

    /// `window` calls in flight: pending calls, refilled as replies are dispatched.
    static func pipelined(_ connection: OpaquePointer, destination: String, calls: Int, window: Int) -> [Double] {
        final class State {
            var latencies: [Double] = []
            var sent = 0
            var done = 0
        }
        let state = State()
        state.latencies.reserveCapacity(calls)
        var inFlight: [(OpaquePointer, UInt64)] = []
        func send() {
            let message = echoCall(destination, UInt32(state.sent))
            var pending: OpaquePointer?
            dbus_connection_send_with_reply(connection, message, &pending, -1)
            dbus_message_unref(message)
            inFlight.append((pending!, DispatchTime.now().uptimeNanoseconds))
            state.sent += 1
        }
        while state.sent < min(window, calls) { send() }
        while state.done < calls {
            dbus_connection_read_write_dispatch(connection, -1)
            var index = 0
            while index < inFlight.count {
                let (pending, start) = inFlight[index]
                if dbus_pending_call_get_completed(pending) != 0 {
                    if let reply = dbus_pending_call_steal_reply(pending) { dbus_message_unref(reply) }
                    dbus_pending_call_unref(pending)
                    state.latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                    state.done += 1
                    inFlight.swapAt(index, inFlight.count - 1)
                    inFlight.removeLast()
                    if state.sent < calls { send() }
                } else {
                    index += 1
                }
            }
        }
        return state.latencies
    }

    static func close(_ connection: OpaquePointer) {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }
}

final class ConnectionBox: @unchecked Sendable {
    let connection: OpaquePointer
    init(_ connection: OpaquePointer) { self.connection = connection }
}
