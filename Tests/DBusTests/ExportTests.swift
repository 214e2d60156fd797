import AsyncSignals
import DBus
import Testing

@Suite("Exported objects: properties, introspection, object manager")
struct ExportTests {
    static let interface = "com.speakerd.Speaker"
    static let properties = "org.freedesktop.DBus.Properties"

    func speakerObject() throws -> DBusObject {
        try DBusObject(interfaces: [DBusInterface(Self.interface,
            methods: [DBusMethod("Rename", inputs: [DBusArgument("name", "s")]) { _ in [] }],
            properties: [
                DBusProperty("Name", value: .string("JBL Flip 5")),
                DBusProperty("Volume", value: .uint16(50), access: .readwrite, validateSet: { value in
                    guard let volume = try? value.as(UInt16.self), volume <= 100 else {
                        throw DBusError.remote(name: "com.speakerd.Error.OutOfRange", message: "volume must be 0...100")
                    }
                }),
            ],
            signals: [DBusSignalDeclaration("Dropped", arguments: [DBusArgument("reason", "s")])])])
    }

    func properties(_ loop: Loopback, _ method: String, _ arguments: [DBusValue]) async throws(DBusError) -> [DBusValue] {
        try await loop.client.call(destination: loop.server.uniqueName, path: "/speaker", interface: Self.properties,
                                   method: method, arguments: arguments)
    }

    @Test("Get, GetAll and Set answer from the declarations; Set validates and announces the change")
    func propertiesInterface() async throws {
        let loop = try await Loopback.start()
        let speaker = try speakerObject()
        try loop.server.export(speaker, at: "/speaker")
        let changes = try await loop.client.signals(matching: DBusMatchRule(
            path: "/speaker", interface: Self.properties, member: "PropertiesChanged"))
        var changeIterator = changes.makeAsyncIterator()

        #expect(try await properties(loop, "Get", [.string(Self.interface), .string("Name")]) == [.variant(.string("JBL Flip 5"))])
        let all = try await properties(loop, "GetAll", [.string(Self.interface)]).decode([String: DBusValue].self, at: 0)
        #expect(all == ["Name": .string("JBL Flip 5"), "Volume": .uint16(50)])

        _ = try await properties(loop, "Set", [.string(Self.interface), .string("Volume"), .variant(.uint16(70))])
        #expect(speaker.property("Volume", of: Self.interface) == .uint16(70))
        let remoteChange = await changeIterator.next()
        #expect(remoteChange?.arguments == [.string(Self.interface), .properties(["Volume": .uint16(70)]), .strings([])])

        try speaker.setProperty("Name", of: Self.interface, to: .string("Kitchen"))
        let localChange = await changeIterator.next()
        #expect(localChange?.arguments == [.string(Self.interface), .properties(["Name": .string("Kitchen")]), .strings([])])

        await #expect(throws: DBusError.remote(name: "com.speakerd.Error.OutOfRange", message: "volume must be 0...100")) {
            try await properties(loop, "Set", [.string(Self.interface), .string("Volume"), .variant(.uint16(170))])
        }
        let readOnly = await remoteError { try await properties(loop, "Set", [.string(Self.interface), .string("Name"), .variant(.string("x"))]) }
        #expect(readOnly?.name == DBusError.Name.propertyReadOnly)
        let wrongType = await remoteError { try await properties(loop, "Set", [.string(Self.interface), .string("Volume"), .variant(.string("loud"))]) }
        #expect(wrongType?.name == DBusError.Name.invalidArgs)
        let unknown = await remoteError { try await properties(loop, "Get", [.string(Self.interface), .string("Colour")]) }
        #expect(unknown?.name == DBusError.Name.unknownProperty)
        #expect(throws: DBusError.self) { try speaker.setProperty("Volume", of: Self.interface, to: .string("loud")) }
    }

    @Test("Introspect describes declared interfaces, standard ones and child nodes")
    func introspection() async throws {
        let loop = try await Loopback.start()
        try loop.server.export(try speakerObject(), at: "/com/speakerd/speaker0")
        let xml = try await loop.client.call(destination: loop.server.uniqueName, path: "/com/speakerd/speaker0",
            interface: "org.freedesktop.DBus.Introspectable", method: "Introspect").decode(String.self, at: 0)
        #expect(xml.contains("<interface name=\"com.speakerd.Speaker\">"))
        #expect(xml.contains("<method name=\"Rename\">"))
        #expect(xml.contains("<arg name=\"name\" type=\"s\" direction=\"in\"/>"))
        #expect(xml.contains("<property name=\"Volume\" type=\"q\" access=\"readwrite\"/>"))
        #expect(xml.contains("<signal name=\"Dropped\">"))
        #expect(xml.contains("org.freedesktop.DBus.Properties"))
        let parent = try await loop.client.call(destination: loop.server.uniqueName, path: "/com/speakerd",
            interface: "org.freedesktop.DBus.Introspectable", method: "Introspect").decode(String.self, at: 0)
        #expect(parent.contains("<node name=\"speaker0\"/>"))
        #expect(!parent.contains("com.speakerd.Speaker"))
    }

    @Test("an object manager lists objects below it and announces additions and removals")
    func objectManager() async throws {
        let loop = try await Loopback.start()
        loop.server.exportObjectManager(at: "/com/speakerd")
        let added = try await loop.client.signals(matching: DBusMatchRule(
            path: "/com/speakerd", interface: "org.freedesktop.DBus.ObjectManager"))
        var events = added.makeAsyncIterator()
        try loop.server.export(try speakerObject(), at: "/com/speakerd/speaker0")

        let objects = try await loop.client.call(destination: loop.server.uniqueName, path: "/com/speakerd",
            interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        let decoded = try objects.decode([DBusObjectPath: [String: [String: DBusValue]]].self, at: 0)
        #expect(decoded == ["/com/speakerd/speaker0": [Self.interface: ["Name": .string("JBL Flip 5"), "Volume": .uint16(50)]]])

        let addedSignal = await events.next()
        #expect(addedSignal?.member == "InterfacesAdded")
        #expect(addedSignal?.arguments.first == .objectPath("/com/speakerd/speaker0"))

        #expect(loop.server.unexport(at: "/com/speakerd/speaker0") != nil)
        let removedSignal = await events.next()
        #expect(removedSignal?.member == "InterfacesRemoved")
        #expect(removedSignal?.arguments == [.objectPath("/com/speakerd/speaker0"), .strings([Self.interface])])
        let unknown = await remoteError {
            try await loop.client.call(destination: loop.server.uniqueName, path: "/com/speakerd/speaker0",
                                       interface: Self.interface, method: "Rename", arguments: [.string("x")])
        }
        #expect(unknown?.name == DBusError.Name.unknownMethod)
    }

    @Test("exporting twice at one path is refused")
    func pathInUse() async throws {
        let loop = try await Loopback.start()
        try loop.server.export(try speakerObject(), at: "/speaker")
        #expect(throws: DBusError.pathInUse("/speaker")) { try loop.server.export(try speakerObject(), at: "/speaker") }
    }

    @Test("closing the serving connection cancels the handlers still running: none is left suspended behind it")
    func closingCancelsRunningHandlers() async throws {
        let started = OneShotSignal<Void, Never>()
        let cancelled = OneShotSignal<Void, Never>()
        let loop = try await Loopback.start(exporting: [DBusInterface(Loopback.interface, methods: [
            DBusMethod("Hold") { _ in
                _ = started.succeed(())
                // Waits for an answer that never comes, like a play waiting for a speaker.
                do { try await Task.sleep(for: .seconds(600)) } catch { _ = cancelled.succeed(()) }
                return []
            },
        ])])
        let call = Task { try await loop.call("Hold", timeout: .seconds(30)) }
        _ = try await started.value(timeout: .seconds(10))
        loop.server.close()
        // The handler sees cancellation as soon as its connection is gone, not ten minutes later.
        _ = try await cancelled.value(timeout: .seconds(10))
        #expect(cancelled.result != nil)
        call.cancel()
    }
}
