@testable import BlueZ
import DBus
import TestSupport
import Testing

/// The same scenarios against the in-process fake and the real client on the mock bus, so the
/// daemon's unit tests (which use the fake) rely on behaviour the real client really has.
@Suite("BlueZClient contract: in-process fake and D-Bus client agree")
struct ClientContractTests {
    enum Implementation: String, CaseIterable, Sendable { case fake, dbus }

    static let speaker = try! BluetoothAddress("11:22:33:44:55:66")
    static let stranger = try! BluetoothAddress("66:55:44:33:22:11")
    static let hci0 = try! BluetoothAddress("00:01:02:03:04:05")

    /// A world with hci0 and a speaker, whichever implementation; `failNextConnect` makes the
    /// speaker answer Connect with page-timeout, `stop` tears it down.
    struct Subject {
        let client: any BlueZClient
        let events: AsyncStream<BlueZEvent>
        let failConnects: @Sendable () async throws -> Void
        let stop: @Sendable () async -> Void
    }

    static func subject(_ implementation: Implementation) async throws -> Subject {
        switch implementation {
        case .fake:
            let fake = FakeBlueZClient(
                adapters: [Adapter(name: "hci0", address: hci0, powered: true)],
                devices: [Device(address: speaker, name: "Flip", icon: "audio-card", deviceClass: 0x240414,
                                 uuids: [BlueZUUID.a2dpSink])])
            return Subject(client: fake, events: fake.events(),
                           failConnects: { await fake.setBehaviour(.fail(FakeBlueZClient.pageTimeout), for: speaker) },
                           stop: { await fake.shutDown() })
        case .dbus:
            let bluez = try await BlueZWorld.start(.speakerd)
            try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
            try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("Flip"))
            _ = await nextEvent(bluez.events) { if case .deviceChanged(let d) = $0 { d.audioSink.isOffered } else { false } }
            let path = BlueZWorld.devicePath("hci0", speaker)
            return Subject(client: bluez.client, events: bluez.events,
                           failConnects: { try await bluez.mock("SetConnectBehavior", .objectPath(path), .string("br-connection-page-timeout")) },
                           stop: { await bluez.stop() })
        }
    }

    @Test("connect, then disconnect: connected, then disconnected locally", arguments: Implementation.allCases)
    func connectAndDisconnect(_ implementation: Implementation) async throws {
        let subject = try await Self.subject(implementation)
        defer { Task { await subject.stop() } }
        try await subject.client.connect(Self.speaker)
        _ = await nextEvent(subject.events) { $0 == .connected(Self.speaker) }
        #expect(try await subject.client.device(Self.speaker)?.connected == true)
        try await subject.client.disconnect(Self.speaker)
        _ = await nextEvent(subject.events) { $0 == .disconnected(Self.speaker, .local) }
        await #expect {
            try await subject.client.disconnect(Self.speaker)
        } throws: { ($0 as? BlueZClientError)?.bluezError?.kind == .notConnected }
    }

    @Test("a speaker that is off: Failed with page-timeout, explained", arguments: Implementation.allCases)
    func speakerOff(_ implementation: Implementation) async throws {
        let subject = try await Self.subject(implementation)
        defer { Task { await subject.stop() } }
        try await subject.failConnects()
        await #expect {
            try await subject.client.connect(Self.speaker)
        } throws: { "\($0)".contains("the speaker is off or out of range") }
    }

    @Test("an unknown address is a clear error for every device operation", arguments: Implementation.allCases)
    func unknownDevice(_ implementation: Implementation) async throws {
        let subject = try await Self.subject(implementation)
        defer { Task { await subject.stop() } }
        let client = subject.client
        let stranger = Self.stranger
        await #expect(throws: BlueZClientError.unknownDevice(stranger)) { try await client.connect(stranger) }
        await #expect(throws: BlueZClientError.unknownDevice(stranger)) { try await client.pair(stranger) }
        await #expect(throws: BlueZClientError.unknownDevice(stranger)) { try await client.setTrusted(stranger, true) }
        await #expect(throws: BlueZClientError.unknownDevice(stranger)) { try await client.removeDevice(stranger) }
        await #expect(throws: BlueZClientError.unknownAdapter(stranger)) { try await client.powerOn(stranger) }
    }

    @Test("pair, trust and forget the speaker", arguments: Implementation.allCases)
    func pairTrustForget(_ implementation: Implementation) async throws {
        let subject = try await Self.subject(implementation)
        defer { Task { await subject.stop() } }
        try await subject.client.pair(Self.speaker)
        _ = await nextEvent(subject.events) { if case .deviceChanged(let d) = $0 { d.paired } else { false } }
        try await subject.client.setTrusted(Self.speaker, true)
        _ = await nextEvent(subject.events) { if case .deviceChanged(let d) = $0 { d.trusted } else { false } }
        #expect(try await subject.client.audioSinkCandidates().map(\.address) == [Self.speaker])
        try await subject.client.removeDevice(Self.speaker)
        _ = await nextEvent(subject.events) { $0 == .deviceRemoved(Self.speaker) }
        #expect(try await subject.client.devices().isEmpty)
    }

    @Test("the A2DP sink profile connects; a profile the speaker lacks is explained", arguments: Implementation.allCases)
    func connectProfile(_ implementation: Implementation) async throws {
        let subject = try await Self.subject(implementation)
        defer { Task { await subject.stop() } }
        await #expect {
            try await subject.client.connectProfile(Self.speaker, uuid: BlueZUUID.a2dpSource)
        } throws: { "\($0)".contains("is BlueALSA or PipeWire running?") }
        try await subject.client.connectProfile(Self.speaker, uuid: BlueZUUID.a2dpSink)
        _ = await nextEvent(subject.events) { $0 == .connected(Self.speaker) }
    }
}
