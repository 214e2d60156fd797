import DBus
import Foundation


/// BlueALSA on a private bus: python-dbusmock with our `org.bluealsa` template
/// (Tests/FakeBlueZ/bluealsa_mock.py). The mock process is ours and ends with `stop()` or
/// `terminateMock()`; on a world of its own (`start()`) or beside a fake BlueZ (`start(on:)`).
public struct MockBlueALSA: Sendable {
    public let world: FakeBusWorld
    public let bus: DBusConnection
    /// Spawned through SpawnedProcess, not Foundation's `Process` (concurrent `Process` use has
    /// crashed the test runner inside libdispatch).
    let process: SpawnedProcess

    /// A bus of its own with nothing but BlueALSA on it.
    public static func start() async throws -> MockBlueALSA {
        try await start(on: try await FakeBusWorld.start(bluez: false))
    }

    /// BlueALSA on `world`'s bus, beside its fake BlueZ; returns once it owns `org.bluealsa`.
    public static func start(on world: FakeBusWorld) async throws -> MockBlueALSA {
        let bus = try await world.connect()
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = world.address
        let owners = try await bus.nameOwnerChanges(for: "org.bluealsa")
        let process = try SpawnedProcess.spawn("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", templatePath],
                                               environment: environment)
        for await owner in owners where owner != nil { break }
        owners.cancel()
        return MockBlueALSA(world: world, bus: bus, process: process)
    }

    /// Asks the mock to publish the A2DP playback PCM a connected speaker gets.
    public func addSpeakerPCM(_ address: String) async throws -> DBusObjectPath {
        let reply = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                                       method: "AddA2DPSink", arguments: [.string("hci0"), .string(address)])
        guard case let .objectPath(path)? = reply.first else { throw FakeBusWorldError.commandFailed("AddA2DPSink", "\(reply)") }
        return path
    }

    public func addPCM(_ address: String, type: String, mode: String, transport: String) async throws {
        _ = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                               method: "AddPCM", arguments: [.string("hci0"), .string(address), .string(type), .string(mode), .string(transport)])
    }

    public func removePCM(_ path: DBusObjectPath) async throws {
        _ = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                               method: "RemovePCM", arguments: [.objectPath(path)])
    }

    /// A PCM's `org.bluealsa.PCM1.Volume` as the mock holds it (`ay`, or whatever a test set).
    public func volume(of pcm: DBusObjectPath) async throws -> DBusValue? {
        try await property("Volume", of: pcm)
    }

    /// Any `org.bluealsa.PCM1` property of a PCM as the mock holds it.
    public func property(_ name: String, of pcm: DBusObjectPath) async throws -> DBusValue? {
        try await bus.call(destination: "org.bluealsa", path: pcm, interface: "org.freedesktop.DBus.Properties", method: "Get",
                           arguments: [.string("org.bluealsa.PCM1"), .string(name)]).first?.unwrappingVariants
    }

    /// Sets a PCM's `Volume` as BlueALSA would when the speaker's buttons move it, in any shape.
    public func setVolume(of pcm: DBusObjectPath, to value: DBusValue) async throws {
        try await setProperty("Volume", of: pcm, to: value)
    }

    /// Sets any `org.bluealsa.PCM1` property of a PCM, as BlueALSA would change it (`Delay` when
    /// the speaker reports its delay), in any shape.
    public func setProperty(_ name: String, of pcm: DBusObjectPath, to value: DBusValue) async throws {
        _ = try await bus.call(destination: "org.bluealsa", path: pcm, interface: "org.freedesktop.DBus.Properties", method: "Set",
                               arguments: [.string("org.bluealsa.PCM1"), .string(name), .variant(value)])
    }

    /// Ends the mock process (BlueALSA exiting) and waits until it has.
    public func terminateMock() async {
        // SIGKILL: gone at once, whatever the mock would do on SIGTERM (it was first chosen
        // because a child of Foundation's `Process` could inherit a mask blocking SIGTERM).
        process.signal(SIGKILL)
        _ = await process.exitStatus()
    }

    public func stop() async {
        await terminateMock()
        bus.close()
        await world.stop()
    }

    static var templatePath: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/FakeBlueZ/bluealsa_mock.py").path
    }
}
