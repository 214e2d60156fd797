import DBus
import Testing

@Suite("Typed conversions say exactly what did not match, and where")
struct ConversionTests {
    @Test("a property bag decodes into Swift types")
    func decodesPropertyBags() throws {
        let reply: [DBusValue] = [.string("org.bluez.Device1"), .properties(["Connected": .bool(true), "RSSI": .int16(-40)])]
        let bag = try reply.decode([String: DBusValue].self, at: 1)
        #expect(try bag.decode("Connected", as: Bool.self) == true)
        #expect(try bag.decode("RSSI", as: Int16.self) == -40)
        #expect(try bag.decode("Missing", as: String.self) == nil)
        #expect(try DBusValue.strings(["a"]).as([String].self) == ["a"])
        #expect(["x": UInt32(1)].dbusValue.signature == "a{su}")
    }

    @Test("a mismatch names the expected and actual signatures and the location")
    func mismatchLocation() throws {
        let reply: [DBusValue] = [.string("x"), .properties(["Connected": .string("yes")])]
        do {
            let bag = try reply.decode([String: DBusValue].self, at: 1)
            _ = try bag.decode("Connected", as: Bool.self)
            Issue.record("expected a mismatch")
        } catch {
            #expect(error == .typeMismatch(expected: "b", actual: "s", location: "key 'Connected'"))
        }
        do {
            _ = try reply.decode([String: Bool].self, at: 1)
            Issue.record("expected a mismatch")
        } catch {
            #expect(error == .typeMismatch(expected: "b", actual: "s", location: "argument 2 → key 'Connected'"))
            #expect(error.description == "type mismatch at argument 2 → key 'Connected': expected 'b', got 's'")
        }
        #expect(throws: DBusError.typeMismatch(expected: "s", actual: "nothing", location: "argument 3")) {
            try reply.decode(String.self, at: 2)
        }
    }
}

@Suite("Bus addresses")
struct BusAddressTests {
    @Test("the system bus honours DBUS_SYSTEM_BUS_ADDRESS and falls back to the standard socket")
    func systemBusAddress() throws {
        let custom = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/private-bus"]
        #expect(try BusAddress.system.resolve { custom[$0] } == "unix:path=/tmp/private-bus")
        #expect(try BusAddress.system.resolve { _ in nil } == BusAddress.defaultSystemAddress)
        #expect(throws: DBusError.self) { try BusAddress.session.resolve { _ in nil } }
        #expect(BusAddress(flag: "system") == .system)
        #expect(BusAddress(flag: "session") == .session)
        #expect(BusAddress(flag: "unix:path=/x") == .address("unix:path=/x"))
    }
}
