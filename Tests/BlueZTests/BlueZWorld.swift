@testable import BlueZ
import Clocks
import DBus
import TestSupport
import Testing

/// A private bus with python-dbusmock's BlueZ on it (stock `bluez5` or our extension), a
/// `DBusBlueZClient` connected to it, and a second connection that plays the test's hand.
struct BlueZWorld {
    enum Template { case stock, speakerd }

    let world: FakeBusWorld
    let client: DBusBlueZClient
    let control: DBusConnection
    let clock: TestClock<Duration>
    let events: AsyncStream<BlueZEvent>

    /// Path of our template, next to this test folder.
    static let templatePath: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)
        return (parts + ["FakeBlueZ", "speakerd_bluez.py"]).joined(separator: "/")
    }()

    static func start(_ template: Template = .stock, bluez: Bool = true,
                      configuration: BlueZClientConfiguration = .init()) async throws -> BlueZWorld {
        let world = try await FakeBusWorld.start(bluez: bluez, template: template == .speakerd ? templatePath : nil)
        let control = try await world.connect()
        let clock = TestClock<Duration>()
        let client = try await DBusBlueZClient.start(connection: try await world.connect(), clock: clock, configuration: configuration)
        return BlueZWorld(world: world, client: client, control: control, clock: clock, events: client.events())
    }

    /// Shuts the client down and closes our connections. The world itself is torn down when the
    /// last reference goes (its deinit closes the script's stdin): `FakeBusWorld.stop()` waits with
    /// Foundation's `Process.waitUntilExit`, which was seen to hang with many worlds in parallel.
    func stop() async {
        await client.shutDown()
        client.connection.close()
        control.close()
    }

    /// Calls the mock's control API (`org.bluez.Mock` on `/` by default).
    @discardableResult
    func mock(_ method: String, _ arguments: DBusValue..., path: DBusObjectPath = "/",
              interface: String = "org.bluez.Mock") async throws -> [DBusValue] {
        try await world.mock(method, interface: interface, path: path, arguments: arguments, using: control)
    }

    /// What the mock itself stores for a property (which may lag behind the signals it sent).
    func storedProperty(_ name: String, of path: DBusObjectPath, interface: String) async throws -> DBusValue {
        try await control.call(destination: "org.bluez", path: path, interface: "org.freedesktop.DBus.Properties",
                               method: "Get", arguments: [.string(interface), .string(name)])[0].unwrappingVariants
    }

    static func devicePath(_ adapter: String, _ address: BluetoothAddress) -> DBusObjectPath {
        try! DBusObjectPath("/org/bluez/\(adapter)/\(address.devicePathElement)")
    }
}

/// Waits for the first event matching `predicate`; fails the test (instead of hanging) when
/// nothing matches within a generous real-time guard.
func nextEvent(
    _ events: AsyncStream<BlueZEvent>, sourceLocation: SourceLocation = #_sourceLocation,
    where predicate: @escaping @Sendable (BlueZEvent) -> Bool
) async -> BlueZEvent? {
    await withTaskGroup(of: BlueZEvent?.self) { group in
        group.addTask {
            for await event in events where predicate(event) { return event }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(20))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        if first == nil { Issue.record("the expected BlueZ event never came", sourceLocation: sourceLocation) }
        return first
    }
}

