import DBus
import Testing

/// The number of match rules the bus holds for `connection` (dbus-daemon's Debug.Stats).
func matchRuleCount(of connection: DBusConnection, asking observer: DBusConnection) async throws -> UInt32 {
    let stats = try await observer.call(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus.Debug.Stats", method: "GetConnectionStats",
        arguments: [.string(connection.uniqueName)])
    let bag = try stats.decode([String: DBusValue].self, at: 0)
    return try bag.decode("MatchRules", as: UInt32.self) ?? 0
}

@Suite("Signals arrive as async streams whose match rules live as long as the stream")
struct SignalTests {
    static let interface = "com.speakerd.Signals"

    @Test("a subscriber receives the matching signals, in order, and not the others")
    func receivesMatchingSignalsInOrder() async throws {
        let loop = try await Loopback.start()
        let stream = try await loop.client.signals(matching: DBusMatchRule(
            sender: loop.server.uniqueName, interface: Self.interface, member: "Tick"))
        for i in 0..<5 {
            try loop.server.emitSignal(path: "/t", interface: Self.interface, member: "Other", arguments: [.int32(Int32(-i))])
            try loop.server.emitSignal(path: "/t", interface: Self.interface, member: "Tick", arguments: [.int32(Int32(i))])
        }
        var received: [DBusSignal] = []
        for await signal in stream {
            received.append(signal)
            if received.count == 5 { break }
        }
        #expect(received.map(\.arguments) == (0..<5).map { [.int32(Int32($0))] })
        #expect(received.allSatisfy { $0.member == "Tick" && $0.sender == loop.server.uniqueName && $0.path == "/t" })
    }

    @Test("argument and path-namespace filters select signals locally even when rules overlap")
    func argumentFilters() async throws {
        let loop = try await Loopback.start()
        let everything = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface))
        let onlyB = try await loop.client.signals(matching: DBusMatchRule(
            pathNamespace: "/dev", interface: Self.interface, arguments: [0: "b"]))
        try loop.server.emitSignal(path: "/dev/x", interface: Self.interface, member: "Pick", arguments: [.string("a")])
        try loop.server.emitSignal(path: "/other", interface: Self.interface, member: "Pick", arguments: [.string("b")])
        try loop.server.emitSignal(path: "/dev/y", interface: Self.interface, member: "Pick", arguments: [.string("b")])
        var iterator = onlyB.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.path == "/dev/y")
        var all = everything.makeAsyncIterator()
        var paths: [DBusObjectPath] = []
        for _ in 0..<3 { if let signal = await all.next() { paths.append(signal.path) } }
        #expect(paths == ["/dev/x", "/other", "/dev/y"])
    }

    @Test("a well-known sender name selects its current owner's signals only, across an owner change")
    func wellKnownSenders() async throws {
        let loop = try await Loopback.start()
        let other = try await loop.world.connect()
        try await loop.server.requestName("com.speakerd.A")
        try await other.requestName("com.speakerd.B")
        let fromA = try await loop.client.signals(matching: DBusMatchRule(sender: "com.speakerd.A", interface: Self.interface))
        let fromB = try await loop.client.signals(matching: DBusMatchRule(sender: "com.speakerd.B", interface: Self.interface))
        // This rule lets every sender's signals reach the connection, so A and B must be told apart locally.
        let everything = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface))
        try other.emitSignal(path: "/b", interface: Self.interface, member: "FromB")
        try loop.server.emitSignal(path: "/a", interface: Self.interface, member: "FromA")
        var a = fromA.makeAsyncIterator()
        var b = fromB.makeAsyncIterator()
        #expect(await a.next()?.member == "FromA")
        #expect(await b.next()?.member == "FromB")

        // A moves to a new owner: the old owner's signals no longer count as A's.
        _ = try await loop.server.releaseName("com.speakerd.A")
        let successor = try await loop.world.connect()
        try await successor.requestName("com.speakerd.A")
        _ = try await loop.client.nameOwner(of: "com.speakerd.A")  // a round trip: NameOwnerChanged has arrived
        try loop.server.emitSignal(path: "/a", interface: Self.interface, member: "FromOldOwner")
        try other.emitSignal(path: "/b", interface: Self.interface, member: "FromB2")
        try successor.emitSignal(path: "/a", interface: Self.interface, member: "FromNewOwner")
        #expect(await b.next()?.member == "FromB2")
        #expect(await a.next()?.member == "FromNewOwner")
        var all = everything.makeAsyncIterator()
        var members: [String] = []
        for _ in 0..<5 { if let signal = await all.next() { members.append(signal.member) } }
        // Different senders' signals may interleave in any order.
        #expect(Set(members) == ["FromB", "FromA", "FromOldOwner", "FromB2", "FromNewOwner"])
    }

    @Test("ending the stream removes its match rule from the bus")
    func matchRuleRemovedWhenStreamEnds() async throws {
        let loop = try await Loopback.start()
        let before = try await matchRuleCount(of: loop.client, asking: loop.client)
        do {
            let stream = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface, member: "Gone"))
            #expect(try await matchRuleCount(of: loop.client, asking: loop.client) == before + 1)
            _ = stream
        }
        // The stream is released: RemoveMatch is sent, and the bus handles it before our next call.
        #expect(try await matchRuleCount(of: loop.client, asking: loop.client) == before)

        let consumer = Task {
            let stream = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface, member: "Cancelled"))
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        while try await matchRuleCount(of: loop.client, asking: loop.client) == before { await Task.yield() }
        consumer.cancel()
        _ = try await consumer.value
        #expect(try await matchRuleCount(of: loop.client, asking: loop.client) == before)
    }

    @Test("cancel() ends iteration and stops deliveries")
    func explicitCancel() async throws {
        let loop = try await Loopback.start()
        let stream = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface))
        try loop.server.emitSignal(path: "/t", interface: Self.interface, member: "One")
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.member == "One")
        stream.cancel()
        try loop.server.emitSignal(path: "/t", interface: Self.interface, member: "Two")
        #expect(await iterator.next() == nil)
    }

    @Test("closing the connection ends its signal streams")
    func closeEndsStreams() async throws {
        let loop = try await Loopback.start()
        let stream = try await loop.client.signals(matching: DBusMatchRule(interface: Self.interface))
        loop.client.close()
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test("name owner changes start with the current owner and follow each change")
    func nameOwnerChanges() async throws {
        let loop = try await Loopback.start()
        let name = "com.speakerd.Owned"
        try await loop.server.requestName(name)
        let owners = try await loop.client.nameOwnerChanges(for: name)
        var iterator = owners.makeAsyncIterator()
        #expect(await iterator.next() == .some(loop.server.uniqueName))
        #expect(try await loop.server.releaseName(name))
        #expect(await iterator.next() == .some(nil))
        let third = try await loop.world.connect()
        try await third.requestName(name)
        #expect(await iterator.next() == .some(third.uniqueName))
        third.close()
        #expect(await iterator.next() == .some(nil))
    }

    @Test("requesting a name someone else owns is a clear nameTaken error")
    func nameTaken() async throws {
        let loop = try await Loopback.start()
        try await loop.server.requestName("com.speakerd.Daemon")
        try await loop.server.requestName("com.speakerd.Daemon")  // owning it already is fine
        await #expect(throws: DBusError.nameTaken("com.speakerd.Daemon")) {
            try await loop.client.requestName("com.speakerd.Daemon")
        }
        #expect(DBusError.nameTaken("com.speakerd.Daemon").description.contains("already owned"))
    }
}
