@testable import BlueZ
import Clocks
@testable import DBus
import TestSupport
import Testing

/// A bluetoothd too old for speakerd: the client names what it found and what is needed, and
/// takes a newer bluetoothd that replaces it without being restarted.
@Suite("BlueZ client against a BlueZ too old for speakerd")
struct OldBlueZTests {
    static let bluez4Template = fakeBlueZTemplate("bluez4_mock.py")
    static let bluez4 = BlueZClientError.unsupportedBlueZ(found: "BlueZ 4 (org.bluez.Manager)", needed: "5.30")

    @Test("BlueZ 4 on the bus: calls fail with an error that names it and asks for BlueZ 5.30 or newer")
    func bluez4IsNamed() async throws {
        let world = try await FakeBusWorld.start(template: Self.bluez4Template)
        let client = try await DBusBlueZClient.start(connection: try await world.connect(), clock: TestClock())
        defer { Task { await client.shutDown(); client.connection.close() } }

        await #expect(throws: Self.bluez4) { try await client.adapters() }
        await #expect(throws: Self.bluez4) { try await client.devices() }
        #expect(Self.bluez4.description
            == "BlueZ 4 (org.bluez.Manager) found; speakerd needs BlueZ 5.30 or newer: upgrade the bluez package")
        #expect(await !client.isAgentRegistered, "BlueZ 4 has no AgentManager1 to register with")
    }

    @Test("BlueZ 4 replaced by BlueZ 5: the same client reads the new bluetoothd and its adapter")
    func replacedByBlueZ5() async throws {
        let world = try await FakeBusWorld.start(template: Self.bluez4Template)
        let client = try await DBusBlueZClient.start(connection: try await world.connect(), clock: TestClock())
        defer { Task { await client.shutDown(); client.connection.close() } }
        let events = client.events()
        await #expect(throws: Self.bluez4) { try await client.adapters() }

        try await world.stopBlueZ()
        try await world.startBlueZ(template: "bluez5")
        _ = await nextEvent(events) { $0 == .bluetoothdAppeared }
        #expect(try await client.adapters().isEmpty)

        let control = try await world.connect()
        defer { control.close() }
        _ = try await world.mock("AddAdapter", arguments: [.string("hci0"), .string("box")], using: control)
        _ = await nextEvent(events) { if case .adapterAdded = $0 { true } else { false } }
        #expect(try await client.adapters().map(\.name) == ["hci0"])
        #expect(await client.support == .supported, "the stock bluez5 adapter has SetDiscoveryFilter")
        #expect(await client.isAgentRegistered)
    }

    @Test("a BlueZ 5 adapter is judged by its introspection: SetDiscoveryFilter (5.30) or not")
    func adapterIntrospectionVerdict() {
        let modern = """
            <node><interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"/></interface>
            <interface name="org.bluez.Adapter1"><method name="StartDiscovery"></method>
            <method name='SetDiscoveryFilter'><arg name="properties" type="a{sv}" direction="in"/></method>
            <method name="StopDiscovery"></method></interface></node>
            """
        let before530 = """
            <node><interface name="org.bluez.Adapter1"><method name="StartDiscovery"></method>
            <method name="StopDiscovery"></method><method name="RemoveDevice"><arg type="o" direction="in"/></method>
            </interface><interface name="org.bluez.Media1"><method name="SetDiscoveryFilter"/></interface></node>
            """
        #expect(BlueZSupport.verdict(adapterIntrospection: modern) == .supported)
        #expect(BlueZSupport.verdict(adapterIntrospection: before530)
            == .tooOld(found: "BlueZ 5 older than 5.30 (org.bluez.Adapter1 has no SetDiscoveryFilter)"))
        #expect(BlueZSupport.verdict(adapterIntrospection: "<node/>") == .undetermined)
    }

    @Test("a pre-5 bluetoothd without org.bluez.Manager is still named as older than BlueZ 5")
    func preFiveWithoutManager() {
        #expect(BlueZSupport.describePreFive(rootIntrospection: nil) == "a BlueZ without an ObjectManager at / (older than BlueZ 5)")
        #expect(BlueZSupport.describePreFive(rootIntrospection: #"<node><interface name="org.bluez.Manager"></interface></node>"#)
            == "BlueZ 4 (org.bluez.Manager)")
        #expect(BlueZSupport.lacksObjectManager(.remote(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "")))
        #expect(!BlueZSupport.lacksObjectManager(.remote(name: "org.freedesktop.DBus.Error.NoReply", message: "")))
    }
}

/// BlueZ 5 before 5.30 on a real bus: its adapter has no SetDiscoveryFilter.
@Suite("BlueZ client against a BlueZ 5 before 5.30")
struct BlueZ5Before530Tests {
    static let template = fakeBlueZTemplate("bluez5_before530_mock.py")

    @Test("its first adapter shows the age: calls then fail with an error that asks for BlueZ 5.30 or newer")
    func adapterWithoutDiscoveryFilter() async throws {
        let world = try await FakeBusWorld.start(template: Self.template)
        let client = try await DBusBlueZClient.start(connection: try await world.connect(), clock: TestClock())
        defer { Task { await client.shutDown(); client.connection.close() } }
        let events = client.events()
        #expect(try await client.adapters().isEmpty, "with no adapter to look at, nothing is judged yet")

        let control = try await world.connect()
        defer { control.close() }
        _ = try await world.mock("AddAdapter", arguments: [.string("hci0"), .string("box")], using: control)
        _ = await nextEvent(events) { if case .adapterAdded = $0 { true } else { false } }
        let tooOld = BlueZClientError.unsupportedBlueZ(
            found: "BlueZ 5 older than 5.30 (org.bluez.Adapter1 has no SetDiscoveryFilter)", needed: "5.30")
        await #expect(throws: tooOld) { try await client.adapters() }
    }
}

/// The path of one of our dbusmock templates in Tests/FakeBlueZ.
func fakeBlueZTemplate(_ file: String) -> String {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)
    return (parts + ["FakeBlueZ", Substring(file)]).joined(separator: "/")
}
