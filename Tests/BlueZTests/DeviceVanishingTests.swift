@testable import BlueZ
import DBus
import TestSupport
import Testing

/// A speaker that disappears from BlueZ while speakerd is talking to it (removed, gone for good,
/// its adapter unplugged) must come back as `.unknownDevice`, the error that says what happened,
/// not as a generic bus error or a timeout.
@Suite("A device vanishing mid-call, with speakerd's BlueZ mock")
struct DeviceVanishingTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")

    func world() async throws -> (BlueZWorld, DBusObjectPath) {
        let bluez = try await BlueZWorld.start(.speakerd)
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.address == self.speaker } else { false } }
        return (bluez, BlueZWorld.devicePath("hci0", speaker))
    }

    /// Removes the device as bluetoothd would (the object goes, InterfacesRemoved is sent).
    func removeDevice(_ path: DBusObjectPath, in bluez: BlueZWorld) async throws {
        _ = try await bluez.control.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
                                         method: "RemoveDevice", arguments: [.objectPath(path)])
    }

    @Test("a speaker removed while Connect waits for an answer fails the connect with unknownDevice at once")
    func removedWhileConnecting() async throws {
        let (bluez, path) = try await world()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetConnectBehavior", .objectPath(path), .string("hang"))

        let connecting = Task { try await bluez.client.connect(speaker) }
        while try await calls("Connect", on: path, in: bluez) == 0 { await Task.yield() }
        try await removeDevice(path, in: bluez)

        // No clock advance: the answer must not wait for the connect timeout.
        let error = await #expect(throws: BlueZClientError.self) { try await connecting.value }
        #expect(error == .unknownDevice(speaker))
        #expect(error?.description == "BlueZ does not know device \(speaker): scan for it first")
    }

    @Test("a call to a speaker whose object is already gone reports unknownDevice, not a bus error")
    func objectAlreadyGone() async throws {
        let (bluez, path) = try await world()
        defer { Task { await bluez.stop() } }
        // The object goes without InterfacesRemoved, so our cache still thinks the speaker exists
        // and the call reaches a path with nothing behind it.
        try await bluez.mock("RemoveObject", .objectPath(path), interface: "org.freedesktop.DBus.Mock")
        for operation in [{ try await bluez.client.connect(speaker) }, { try await bluez.client.disconnect(speaker) },
                          { try await bluez.client.setTrusted(speaker, true) }] as [@Sendable () async throws -> Void] {
            let error = await #expect(throws: BlueZClientError.self) { try await operation() }
            #expect(error == .unknownDevice(speaker))
        }
    }

    func calls(_ method: String, on path: DBusObjectPath, in bluez: BlueZWorld) async throws -> Int {
        try await bluez.mock("GetMethodCalls", .string(method), path: path, interface: "org.freedesktop.DBus.Mock")
            .first?.as([DBusValue].self).count ?? 0
    }
}
