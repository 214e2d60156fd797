import DBus
import Glibc
import Testing
import TestSupport

/// How a connection ends, as a daemon must tell it apart: closed by us (shutting down) or lost
/// because the bus daemon went away (then it has no API left and should exit to be restarted).
@Suite("The end of a connection: closed by us, or lost with the bus")
struct ConnectionEndTests {
    @Test("the bus daemon dying ends the connection as lost: a waiter hears it, streams end, calls fail")
    func busDeathIsLost() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let bus = try await world.connect()
        let stream = try await bus.signals(matching: DBusMatchRule(interface: "com.speakerd.Test"))
        let waiter = Task { await bus.waitUntilEnded() }
        #expect(bus.end == nil)

        let busPID = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                        interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
                                        arguments: [.string("org.freedesktop.DBus")]).decode(UInt32.self, at: 0)
        // A crash, not a polite exit: the socket just hangs up.
        #expect(kill(pid_t(busPID), SIGKILL) == 0)

        #expect(await waiter.value == .lost)
        #expect(bus.end == .lost)
        #expect(!bus.isConnected)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == nil, "a signal stream outlived its connection")
        await #expect(throws: DBusError.disconnected) { try await bus.nameOwner(of: "org.bluez") }
        // A late waiter is answered at once.
        #expect(await bus.waitUntilEnded() == .lost)
        _ = world
    }

    @Test("closing a connection ends it as closed, not lost; the bus and its other clients carry on")
    func closeIsClosed() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let first = try await world.connect()
        let second = try await world.connect()
        let waiter = Task { await first.waitUntilEnded() }
        first.close()
        #expect(await waiter.value == .closed)
        #expect(first.end == .closed)
        #expect(second.end == nil)
        #expect(try await second.nameOwner(of: second.uniqueName) == second.uniqueName)
        second.close()
        #expect(await second.waitUntilEnded() == .closed)
        _ = world
    }

    @Test("a waiter cancelled before the end gets nil at once, and the connection stays up")
    func cancelledWaiter() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let bus = try await world.connect()
        let waiter = Task { await bus.waitUntilEnded() }
        waiter.cancel()
        #expect(await waiter.value == nil)
        #expect(bus.end == nil)
        #expect(try await bus.nameOwner(of: bus.uniqueName) == bus.uniqueName)
        bus.close()
        _ = world
    }
}
