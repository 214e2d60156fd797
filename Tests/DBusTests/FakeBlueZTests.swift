import DBus
import Testing
import TestSupport

@Suite("The fake-BlueZ harness: python-dbusmock's stock bluez5 template on a private bus")
struct FakeBlueZTests {
    @Test("GetManagedObjects on the stock mock lists an adapter and a device added through its mock interface")
    func managedObjectsFromStockMock() async throws {
        let world = try await FakeBusWorld.start()
        let bus = try await world.connect()
        let adapter = try await world.mock("AddAdapter", arguments: [.string("hci0"), .string("my-computer")], using: bus)
        #expect(adapter == [.string("/org/bluez/hci0")])
        _ = try await world.mock("AddDevice", arguments: [.string("hci0"), .string("11:22:33:44:55:66"), .string("JBL Flip 5")], using: bus)

        let reply = try await bus.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                       method: "GetManagedObjects", timeout: .seconds(10))
        let objects = try reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self, at: 0)
        #expect(try objects["/org/bluez/hci0"]?["org.bluez.Adapter1"]?.decode("Address", as: String.self) != nil)
        let device = objects["/org/bluez/hci0/dev_11_22_33_44_55_66"]?["org.bluez.Device1"]
        #expect(try device?.decode("Alias", as: String.self) == "JBL Flip 5")
        #expect(try device?.decode("Connected", as: Bool.self) == false)
        await world.stop()
    }

    @Test("restarting the mock looks like a bluetoothd restart: the owner goes away and comes back")
    func restartIsVisibleAsNameOwnerChanges() async throws {
        let world = try await FakeBusWorld.start()
        let bus = try await world.connect()
        let owners = try await bus.nameOwnerChanges(for: "org.bluez")
        var iterator = owners.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first != nil)
        try await world.restartBlueZ()
        #expect(await iterator.next() == .some(nil))
        let second = try #require(await iterator.next())
        #expect(second != nil && second != first)
        try await world.stopBlueZ()
        #expect(await iterator.next() == .some(nil))
        try await world.startBlueZ()
        #expect(await iterator.next() != .some(nil))
    }

    @Test("a world without BlueZ is just a bus, and stopping it disconnects its clients")
    func busOnly() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let bus = try await world.connect()
        #expect(bus.uniqueName.hasPrefix(":"))
        #expect(try await bus.nameOwner(of: "org.bluez") == nil)
        await world.stop()
        // The bus vanishing ends the connection cleanly: calls fail with .disconnected.
        await #expect(throws: DBusError.disconnected) { try await bus.nameOwner(of: "org.bluez") }
        #expect(!bus.isConnected)
    }
}
