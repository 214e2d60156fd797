import AsyncSignals
import DBus
import TestSupport
import Testing

struct Refusal: DBusErrorConvertible, CustomStringConvertible {
    var dbusErrorName: String { "com.speakerd.Error.Refused" }
    var dbusErrorMessage: String { "the speaker refused" }
    var description: String { dbusErrorMessage }
}

struct PlainSwiftError: Error, CustomStringConvertible {
    var description: String { "something plain went wrong" }
}

@Suite("Method calls: replies, typed errors, timeouts, cancellation")
struct CallTests {
    let gate = HeldGate()

    func start() async throws -> Loopback {
        let gate = self.gate
        return try await Loopback.start(exporting: [DBusInterface(Loopback.interface, methods: [
            echo("Echo", "s"),
            echo("EchoNumber", "u"),
            DBusMethod("FailRemote") { _ in throw DBusError.remote(name: "com.speakerd.Error.NotFound", message: "no such song") },
            DBusMethod("FailConvertible") { _ in throw Refusal() },
            DBusMethod("FailPlain") { _ in throw PlainSwiftError() },
            DBusMethod("Hang") { _ in await gate.wait(); return [] },
            DBusMethod("WrongOutput", outputs: [DBusArgument("x", "s")]) { _ in [.int32(1)] },
        ])])
    }

    @Test("a reply carries the handler's values")
    func replies() async throws {
        let loop = try await start()
        #expect(try await loop.call("Echo", [.string("hello")]) == [.string("hello")])
    }

    @Test("errors thrown by a handler arrive with their D-Bus name and message")
    func typedErrors() async throws {
        let loop = try await start()
        await #expect(throws: DBusError.remote(name: "com.speakerd.Error.NotFound", message: "no such song")) {
            try await loop.call("FailRemote")
        }
        await #expect(throws: DBusError.remote(name: "com.speakerd.Error.Refused", message: "the speaker refused")) {
            try await loop.call("FailConvertible")
        }
        await #expect(throws: DBusError.remote(name: DBusError.Name.failed, message: "something plain went wrong")) {
            try await loop.call("FailPlain")
        }
    }

    @Test("unknown methods, wrong argument types and bad replies are D-Bus errors, not crashes")
    func protocolErrors() async throws {
        let loop = try await start()
        let unknown = await remoteError { try await loop.call("NoSuchMethod") }
        #expect(unknown?.name == DBusError.Name.unknownMethod)
        #expect(unknown?.message.contains("NoSuchMethod") == true)
        let wrongType = await remoteError { try await loop.call("Echo", [.int32(3)]) }
        #expect(wrongType?.name == DBusError.Name.invalidArgs)
        #expect(wrongType?.message.contains("takes 's', got 'i'") == true)
        let badReply = await remoteError { try await loop.call("WrongOutput") }
        #expect(badReply?.name == DBusError.Name.failed)
        #expect(badReply?.message.contains("declared 's'") == true)
    }

    @Test("invalid names and strings are refused before they reach libdbus")
    func invalidInputIsRefused() async throws {
        let loop = try await start()
        await #expect(throws: DBusError.invalidArgument("'not a name' is not a valid D-Bus bus name")) {
            try await loop.client.call(destination: "not a name", path: "/", interface: nil, method: "X")
        }
        await #expect(throws: DBusError.self) {
            try await loop.call("Echo", [.string("nul\u{0}inside")])
        }
        await #expect(throws: DBusError.self) {
            try await loop.call("Echo", [.array(element: "s", [.int32(1)])])
        }
        let badPath = "relative/path", badSignature = "a{vs}"
        #expect(throws: DBusError.invalidArgument("'relative/path' is not a valid D-Bus object path")) { try DBusObjectPath(badPath) }
        #expect(throws: DBusError.invalidArgument("'a{vs}' is not a valid D-Bus signature")) { try DBusSignature(badSignature) }
    }

    @Test("a method that never replies times out after the call's timeout")
    func timeout() async throws {
        let loop = try await start()
        await #expect(throws: DBusError.timeout(method: "com.speakerd.Test.Hang", milliseconds: 50)) {
            try await loop.call("Hang", timeout: .milliseconds(50))
        }
        gate.open()
    }

    @Test("cancelling the calling task ends the call with .cancelled while the server still holds it")
    func cancellation() async throws {
        let loop = try await start()
        let call = Task { try await loop.call("Hang") }
        while gate.waiting == 0 { await Task.yield() }
        call.cancel()
        await #expect(throws: DBusError.cancelled) { try await call.value }
        gate.open()
        // The connection is still healthy afterwards.
        #expect(try await loop.call("Echo", [.string("after")]) == [.string("after")])
    }

    @Test("a task cancelled before calling never sends")
    func cancelledBeforeCalling() async throws {
        let loop = try await start()
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await loop.call("Echo", [.string("x")])
        }
        await #expect(throws: DBusError.cancelled) { try await call.value }
    }

    @Test("10,000 concurrent calls all get their own reply")
    func tenThousandConcurrentCalls() async throws {
        let loop = try await start()
        let count: UInt32 = 10_000
        let replies = try await withThrowingTaskGroup(of: (UInt32, [DBusValue]).self) { group in
            for i in 0..<count { group.addTask { (i, try await loop.call("EchoNumber", [.uint32(i)])) } }
            var replies: [UInt32: [DBusValue]] = [:]
            for try await (i, reply) in group { replies[i] = reply }
            return replies
        }
        #expect(replies.count == Int(count))
        #expect(replies.allSatisfy { $0.value == [.uint32($0.key)] })
    }

    @Test("after close, calls fail with .disconnected")
    func closedConnection() async throws {
        let loop = try await start()
        loop.client.close()
        await #expect(throws: DBusError.disconnected) { try await loop.call("Echo", [.string("x")]) }
        #expect(!loop.client.isConnected)
    }

    @Test("a bus that cannot be reached is a clear connection error")
    func unreachableBus() async throws {
        await #expect(throws: DBusError.self) {
            try await DBusConnection.connect(.address("unix:path=/nonexistent/speakerd-test-bus"))
        }
        await #expect(throws: DBusError.connectionFailed(address: "nonsense", reason: "not a D-Bus address (expected e.g. unix:path=/run/dbus/system_bus_socket)")) {
            try await DBusConnection.connect(.address("nonsense"))
        }
    }
}

/// The name and message of the `DBusError.remote` that `body` throws, or nil (recorded as an issue).
func remoteError(_ body: () async throws -> Any) async -> (name: String, message: String)? {
    do {
        _ = try await body()
        Issue.record("expected a D-Bus error reply")
    } catch let error as DBusError {
        if case .remote(let name, let message) = error { return (name, message) }
        Issue.record("expected a D-Bus error reply, got \(error)")
    } catch {
        Issue.record("expected a D-Bus error reply, got \(error)")
    }
    return nil
}
