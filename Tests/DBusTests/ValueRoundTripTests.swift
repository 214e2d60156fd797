import DBus
import Glibc
import Testing

/// One sample of every D-Bus type, alone and nested. Built per test (not a global) so the
/// leak check sees every value released.
func makeSamples() -> [DBusValue] { [
    .byte(0), .byte(255), .bool(true), .bool(false),
    .int16(.min), .uint16(.max), .int32(-42), .uint32(.max), .int64(.min), .uint64(.max),
    .double(-0.5), .double(.greatestFiniteMagnitude),
    .string(""), .string("héllo wörld ♫"),
    .objectPath("/org/bluez/hci0/dev_11_22_33_44_55_66"), .signature("a{sv}(ii)"),
    .array(element: "s", []), .strings(["a", "b"]),
    .array(element: "ay", [.array(element: "y", [.byte(1), .byte(2)]), .array(element: "y", [])]),
    .dictionary(key: "s", value: "v", []),
    .properties(["Connected": .bool(true), "Name": .string("JBL Flip 5"), "RSSI": .int16(-60)]),
    .dictionary(key: "o", value: "a{sa{sv}}", [DBusDictionaryEntry(
        key: .objectPath("/org/bluez/hci0"),
        value: .dictionary(key: "s", value: "a{sv}", [DBusDictionaryEntry(key: .string("org.bluez.Adapter1"), value: .properties(["Powered": .bool(true)]))]))]),
    .dictionary(key: "y", value: "(sd)", [DBusDictionaryEntry(key: .byte(7), value: .structure([.string("x"), .double(1.5)]))]),
    .structure([.int32(1), .structure([.string("nested"), .array(element: "i", [.int32(3)])])]),
    .variant(.variant(.variant(.uint16(9)))),
    .variant(.array(element: "v", [.variant(.string("deep"))])),
] }

@Suite("Values survive a trip through an exported loopback object")
struct ValueRoundTripTests {
    @Test("every type, alone and nested, comes back unchanged through a real bus")
    func everyTypeRoundTrips() async throws {
        let samples = makeSamples()
        let methods = samples.enumerated().map { echo("Echo\($0.offset)", $0.element.signature) }
            + [echo("EchoAll", try DBusSignature(samples.map(\.signature.rawValue).joined()))]
        let loop = try await Loopback.start(exporting: [DBusInterface(Loopback.interface, methods: methods)])
        for (index, value) in samples.enumerated() {
            let reply = try await loop.call("Echo\(index)", [value])
            #expect(reply == [value], "sample \(index) \(value.signature)")
        }
        #expect(try await loop.call("EchoAll", samples) == samples)
    }

    @Test("an empty array keeps its element type on the wire")
    func emptyArraysKeepTheirType() async throws {
        let loop = try await Loopback.start(exporting: [DBusInterface(Loopback.interface, methods: [echo("Echo", "v")])])
        let reply = try await loop.call("Echo", [.variant(.array(element: "a{oa{sv}}", []))])
        #expect(reply.first?.unwrappingVariants.signature == "aa{oa{sv}}")
    }

    @Test("a file descriptor sent to the server can be read there, and one sent back can be read here")
    func unixFDsTravelBothWays() async throws {
        let read = DBusMethod("ReadAndAnswer", inputs: [DBusArgument("fd", "h")], outputs: [DBusArgument("text", "s"), DBusArgument("reply", "h")]) { call in
            let fd = try call.argument(0, as: DBusUnixFD.self)
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = Glibc.read(fd.rawValue, &buffer, 64)
            let (replyRead, replyWrite) = try makePipe()
            _ = "from server".withCString { Glibc.write(replyWrite.rawValue, $0, 11) }
            return [.string(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)), .unixFD(replyRead)]
        }
        let loop = try await Loopback.start(exporting: [DBusInterface(Loopback.interface, methods: [read])])
        #expect(await loop.client.canPassFileDescriptors)
        let (readEnd, writeEnd) = try makePipe()
        _ = "from client".withCString { Glibc.write(writeEnd.rawValue, $0, 11) }
        let reply = try await loop.call("ReadAndAnswer", [.unixFD(readEnd)])
        #expect(try reply.decode(String.self, at: 0) == "from client")
        let returned = try reply.decode(DBusUnixFD.self, at: 1)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = Glibc.read(returned.rawValue, &buffer, 64)
        #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "from server")
    }
}

func makePipe() throws -> (read: DBusUnixFD, write: DBusUnixFD) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw DBusError.invalidArgument("pipe failed") }
    return (DBusUnixFD(taking: fds[0]), DBusUnixFD(taking: fds[1]))
}
