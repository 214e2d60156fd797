import DBus
import Foundation
import Glibc
import Logind

/// python-dbusmock's stock `logind` template on a test's private bus.
///
/// `scripts/fake-bluez --template` waits for `org.bluez` to be owned, which logind never
/// takes, so the bus comes from `FakeBusWorld.start(bluez: false)` and the mock is spawned here.
/// It is killed when this object goes away; if the test process dies first, the bus it is
/// connected to dies with the harness and the mock exits with it.
public final class FakeLogind: Sendable {
    public let world: FakeBusWorld
    /// A connection for the test's own checks (ListInhibitors, EmitSignal).
    public let control: DBusConnection
    private let mock: SpawnedProcess

    private init(world: FakeBusWorld, control: DBusConnection, mock: SpawnedProcess) {
        self.world = world
        self.control = control
        self.mock = mock
    }

    /// The mock exits at once on SIGKILL; SpawnedProcess's own thread reaps it.
    deinit { mock.signal(SIGKILL) }

    /// The logind mock owning `org.freedesktop.login1` on `world`'s bus (a new bus by default).
    public static func start(on existing: FakeBusWorld? = nil) async throws -> FakeLogind {
        let world: FakeBusWorld
        if let existing { world = existing } else { world = try await FakeBusWorld.start(bluez: false) }
        let control = try await world.connect()
        let owners = try await control.nameOwnerChanges(for: LogindClient.busName)
        let mock = try spawnMock(busAddress: world.address)
        for await owner in owners where owner != nil {
            owners.cancel()
            return FakeLogind(world: world, control: control, mock: mock)
        }
        mock.signal(SIGKILL)
        throw FakeLogindError.didNotStart
    }

    /// The inhibitors logind holds now, as (what, who, why, mode).
    public func inhibitors() async throws -> [[String]] {
        let reply = try await control.call(
            destination: LogindClient.busName, path: LogindClient.objectPath,
            interface: LogindClient.managerInterface, method: "ListInhibitors")
        guard case .array(_, let rows) = reply.first else { throw FakeLogindError.unexpected("\(reply)") }
        return try rows.map { row in
            guard case .structure(let fields) = row else { throw FakeLogindError.unexpected("\(row)") }
            return fields.prefix(4).compactMap { if case .string(let text) = $0 { text } else { nil } }
        }
    }

    /// The inhibitor list once the mock has caught up with `count` inhibitors.
    ///
    /// The mock notices a closed lock through a GLib fd watch that can run after a method call
    /// already queued, so a release shows up a main-loop iteration or two later (or a little
    /// more when a process spawned by a parallel test briefly shares our descriptors between
    /// its fork and exec). Each attempt
    /// is one round-trip to the mock (no sleeping); the last list is returned either way so a
    /// failing test shows what the mock still holds.
    public func inhibitors(settlingAt count: Int, attempts: Int = 1_000) async throws -> [[String]] {
        var list = try await inhibitors()
        for _ in 1..<attempts where list.count != count {
            list = try await inhibitors()
        }
        return list
    }

    /// Makes the mock emit `PrepareForSleep(start)`, as logind does around a suspend.
    public func emitPrepareForSleep(_ start: Bool) async throws {
        _ = try await control.call(
            destination: LogindClient.busName, path: LogindClient.objectPath,
            interface: "org.freedesktop.DBus.Mock", method: "EmitSignal",
            arguments: [.string(LogindClient.managerInterface), .string("PrepareForSleep"), .string("b"),
                        .array(element: "v", [.variant(.bool(start))])])
    }

    private static func spawnMock(busAddress: String) throws -> SpawnedProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = busAddress
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        do {
            return try SpawnedProcess.spawn("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "logind"],
                                            environment: environment)
        } catch {
            throw FakeLogindError.spawnFailed(error.description)
        }
    }
}

public enum FakeLogindError: Error, CustomStringConvertible {
    case spawnFailed(String)
    case didNotStart
    case unexpected(String)

    public var description: String {
        switch self {
        case .spawnFailed(let why): "could not start the logind mock: \(why)"
        case .didNotStart: "the logind mock never took org.freedesktop.login1"
        case .unexpected(let reply): "unexpected ListInhibitors reply: \(reply)"
        }
    }
}
