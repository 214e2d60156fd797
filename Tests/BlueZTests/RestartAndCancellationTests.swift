@testable import BlueZ
import DBus
import TestSupport
import Testing

@Suite("bluetoothd restarts with speakerd's BlueZ mock")
struct BluetoothdRestartTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")

    @Test("bluetoothd restarting while the speaker is connected: vanished, then what went with it, then back and usable")
    func restartWhileConnected() async throws {
        let bluez = try await BlueZWorld.start(.speakerd)
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.address == self.speaker } else { false } }
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }

        try await bluez.world.restartBlueZ()
        // The cause comes first: read first, the removals would look like an adapter unplugged.
        let first = await nextEvent(bluez.events) {
            switch $0 {
            case .bluetoothdVanished, .disconnected, .deviceRemoved, .adapterRemoved: true
            default: false
            }
        }
        #expect(first == .bluetoothdVanished)
        _ = await nextEvent(bluez.events) { $0 == .disconnected(self.speaker, .unspecified) }
        _ = await nextEvent(bluez.events) { if case .adapterRemoved(let name, _) = $0 { name == "hci0" } else { false } }
        _ = await nextEvent(bluez.events) { $0 == .bluetoothdRestarted }
        #expect(await bluez.client.isAgentRegistered)

        // The new bluetoothd finds the adapter and the speaker again; the client needs no restart.
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.address == self.speaker } else { false } }
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
    }

    @Test("our template also loads on top of a running stock bluez5 mock")
    func templateOnTopOfStock() async throws {
        let bluez = try await BlueZWorld.start(.stock)
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddTemplate", .string(BlueZWorld.templatePath), .properties([:]),
                             interface: "org.freedesktop.DBus.Mock")
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
        let path = BlueZWorld.devicePath("hci0", speaker)
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.address == self.speaker } else { false } }
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
        #expect(try await bluez.storedProperty("Connected", of: path, interface: "org.bluez.Device1") == .bool(true),
                "our Connect keeps the stored property in step with the signal")
        try await bluez.mock("EmitDisconnected", .objectPath(path), .string("org.bluez.Reason.Timeout"), .string("Connection timeout"))
        _ = await nextEvent(bluez.events) { $0 == .disconnected(self.speaker, .timeout) }
    }
}

@Suite("Pairing cancellation with speakerd's BlueZ mock")
struct PairingCancellationTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")

    @Test("cancelling the task that pairs cancels the pairing in BlueZ too")
    func cancelPairing() async throws {
        let bluez = try await BlueZWorld.start(.speakerd)
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.address == self.speaker } else { false } }
        let path = BlueZWorld.devicePath("hci0", speaker)
        try await bluez.mock("SetPairingMode", .objectPath(path), .string("hang"))

        let pairing = Task { try await bluez.client.pair(speaker) }
        while try await calls("Pair", on: path, in: bluez) == 0 { await Task.yield() }
        pairing.cancel()
        await #expect(throws: CancellationError.self) { try await pairing.value }
        #expect(try await calls("CancelPairing", on: path, in: bluez) == 1)
        #expect(try await bluez.client.device(speaker)?.paired == false)
    }

    func calls(_ method: String, on path: DBusObjectPath, in bluez: BlueZWorld) async throws -> Int {
        try await bluez.mock("GetMethodCalls", .string(method), path: path, interface: "org.freedesktop.DBus.Mock")
            .first?.as([DBusValue].self).count ?? 0
    }
}
