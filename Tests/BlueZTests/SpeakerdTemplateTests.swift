import AsyncSignals
@testable import BlueZ
import Clocks
import DBus
import TestSupport
import Testing

/// The client against our template extension (Tests/FakeBlueZ/speakerd_bluez.py), which adds what
/// bluetoothd does and the stock template does not: Disconnected reasons, rfkill, agent-driven
/// pairing, profile connection, a Connect that hangs without blocking the mock, RSSI bursts.
@Suite("BlueZ client against speakerd's BlueZ mock")
struct SpeakerdTemplateTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")
    let hci0 = try! BluetoothAddress("00:01:02:03:04:05")

    /// A world with hci0 and one speaker on it, already seen by the client.
    func worldWithSpeaker(configuration: BlueZClientConfiguration = .init()) async throws -> BlueZWorld {
        let bluez = try await BlueZWorld.start(.speakerd, configuration: configuration)
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(speaker.description), .string("JBL Flip 5"))
        _ = await nextEvent(bluez.events) { if case .deviceChanged(let d) = $0 { d.audioSink.isOffered } else { false } }
        return bluez
    }

    var speakerPath: DBusObjectPath { BlueZWorld.devicePath("hci0", speaker) }

    @Test("a speaker is classified as an audio sink from the class, icon and UUIDs BlueZ reports")
    func speakerIsAudioSink() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        let candidates = try await bluez.client.audioSinkCandidates()
        #expect(candidates.map(\.address) == [speaker])
        #expect(candidates.first?.uuids.contains(BlueZUUID.a2dpSink) == true)
    }

    @Test("the speaker switched off by its user is reported with BlueZ's reason: remote")
    func disconnectedReason() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.client.connectProfile(speaker, uuid: BlueZUUID.a2dpSink)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
        try await bluez.mock("EmitDisconnected", .objectPath(speakerPath),
                             .string("org.bluez.Reason.Remote"), .string("Connection terminated by remote user"))
        _ = await nextEvent(bluez.events) { $0 == .disconnected(self.speaker, .remote) }
        #expect(try await bluez.client.device(speaker)?.connected == false)
    }

    @Test("our own disconnect is reported as local")
    func localDisconnect() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
        try await bluez.client.disconnect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .disconnected(self.speaker, .local) }
    }

    @Test("connecting a profile the speaker lacks points at the missing audio endpoint")
    func profileUnavailable() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        await #expect {
            try await bluez.client.connectProfile(speaker, uuid: "0000110a-0000-1000-8000-00805f9b34fb")
        } throws: { error in
            "\(error)".contains("no audio endpoint registered: is BlueALSA or PipeWire running?")
        }
    }

    @Test("an rfkill-blocked adapter is a clear error, before and without a D-Bus round trip")
    func rfkill() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetPowerState", .string("hci0"), .string("off-blocked"))
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.isBlocked } else { false } }
        await #expect(throws: BlueZClientError.adapterBlocked(name: "hci0")) { try await bluez.client.powerOn(hci0) }

        try await bluez.mock("SetPowerState", .string("hci0"), .string("off"))
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.powerState == .off } else { false } }
        try await bluez.client.powerOn(hci0)
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.powered && a.powerState == .on } else { false } }
    }

    /// Real bluetoothd 5.66 answers `Powered=true` with `Busy` while it powers a controller that
    /// has just come back by itself (found by the real-Bluetooth harness's adapter-back scenario:
    /// start-up gave up and readiness stayed "waiting for an adapter").
    @Test("an adapter that answers Busy while it comes back is powered once it stops being busy")
    func busyAdapterPoweredOnRetry() async throws {
        let bluez = try await worldWithSpeaker(configuration: .init(callTimeout: .seconds(3600)))
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetPowerState", .string("hci0"), .string("off"))
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { !a.powered } else { false } }
        try await bluez.mock("SetPowerBusy", .string("hci0"), .uint32(3))

        let powering = Task { try await bluez.client.powerOn(hci0) }
        await advanceUntilDone(bluez.clock, by: DBusBlueZClient.busyRetryDelay, powering)
        try await powering.value
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.powered } else { false } }
        let left = try #require(try await bluez.mock("GetPowerBusy", .string("hci0")).first)
        #expect(try left.as(UInt32.self) == 0, "not every Busy answer was asked for: the client stopped early")
    }

    @Test("an adapter that stays busy ends in BlueZ's Busy, told in words, after the retries")
    func busyAdapterGivesUp() async throws {
        let bluez = try await worldWithSpeaker(configuration: .init(callTimeout: .seconds(3600)))
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetPowerState", .string("hci0"), .string("off"))
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { !a.powered } else { false } }
        try await bluez.mock("SetPowerBusy", .string("hci0"), .uint32(UInt32(DBusBlueZClient.busyRetries + 2)))

        let powering = Task { try await bluez.client.powerOn(hci0) }
        await advanceUntilDone(bluez.clock, by: DBusBlueZClient.busyRetryDelay, powering)
        await #expect {
            try await powering.value
        } throws: { error in
            guard case BlueZClientError.bluez(let bluezError, _) = error else { return false }
            return bluezError.kind == .busy && "\(error)".contains("busy")
        }
        // One first try and `busyRetries` more: one Busy answer is left unasked.
        let left = try #require(try await bluez.mock("GetPowerBusy", .string("hci0")).first)
        #expect(try left.as(UInt32.self) == 1)
        #expect(try await bluez.client.adapters().first?.powered == false)
    }

    @Test("rfkill blocking the adapter behind our back: BlueZ's refusal still becomes the rfkill error")
    func rfkillUnannounced() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("UpgradeAdapter", .string("hci0"))
        _ = try await bluez.control.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
                                         method: "Set", arguments: [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.bool(false))])
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { !a.powered } else { false } }
        // Stored without a PropertiesChanged: the client still believes the adapter is merely off.
        try await bluez.mock("AddProperty", .string("org.bluez.Adapter1"), .string("PowerState"), .variant(.string("off-blocked")),
                             path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Mock")
        await #expect(throws: BlueZClientError.adapterBlocked(name: "hci0")) { try await bluez.client.powerOn(hci0) }
    }

    @Test("pairing asks our agent, which confirms for the speaker we are pairing with")
    func pairThroughAgent() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetPairingMode", .objectPath(speakerPath), .string("confirm"))
        try await bluez.client.pair(speaker)
        _ = await nextEvent(bluez.events) { if case .deviceChanged(let d) = $0 { d.paired && d.bonded } else { false } }
        try await bluez.client.setTrusted(speaker, true)
        _ = await nextEvent(bluez.events) { if case .deviceChanged(let d) = $0 { d.trusted } else { false } }
        await #expect(throws: BlueZClientError.self) { try await bluez.client.pair(speaker) }
    }

    @Test("a stranger pairing with the box is refused by our agent")
    func strangerRefused() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        let stranger = try BluetoothAddress("AA:BB:CC:DD:EE:01")
        let path = try #require(try await bluez.mock("AddSpeaker", .string("hci0"), .string(stranger.description), .string("Phone")).first)
        let strangerPath = try path.as(String.self)
        try await bluez.mock("SetPairingMode", .objectPath(try DBusObjectPath(strangerPath)), .string("authorize"))
        // Somebody else (not speakerd) starts the pairing; BlueZ asks our default agent.
        await #expect {
            _ = try await bluez.control.call(destination: "org.bluez", path: try DBusObjectPath(strangerPath),
                                             interface: "org.bluez.Device1", method: "Pair")
        } throws: { error in
            "\(error)".contains("AuthenticationRejected")
        }
    }

    @Test("a Connect that hangs is cancelled by our timeout, and the mock stays responsive")
    func hangWithoutBlocking() async throws {
        let bluez = try await worldWithSpeaker(configuration: .init(connectTimeout: .seconds(20)))
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetConnectBehavior", .objectPath(speakerPath), .string("hang"))
        let attempt = Task { try await bluez.client.connect(speaker) }
        await advanceUntilDone(bluez.clock, by: .seconds(20), attempt)
        await #expect(throws: BlueZClientError.timedOut(operation: "Connect to \(speaker)", after: .seconds(20))) {
            try await attempt.value
        }
        try await bluez.mock("SetConnectBehavior", .objectPath(speakerPath), .string("ok"))
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
    }

    @Test("cancelling the caller's task abandons a hanging connect at once")
    func cancelHangingConnect() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetConnectBehavior", .objectPath(speakerPath), .string("hang"))
        let attempt = Task { try await bluez.client.connect(speaker) }
        // Wait until the mock really holds the call unanswered, then cancel.
        while try await bluez.mock("GetMethodCalls", .string("Connect"), path: speakerPath, interface: "org.freedesktop.DBus.Mock")
            .first?.as([DBusValue].self).isEmpty ?? true {
            await Task.yield()
        }
        attempt.cancel()
        await #expect(throws: CancellationError.self) { try await attempt.value }
    }

    @Test("a page timeout injected at runtime is explained as speaker off or out of range")
    func pageTimeout() async throws {
        let bluez = try await worldWithSpeaker()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("SetConnectBehavior", .objectPath(speakerPath), .string("br-connection-page-timeout"))
        await #expect {
            try await bluez.client.connect(speaker)
        } throws: { error in
            (error as? BlueZClientError)?.bluezError?.connectionFailure == ConnectionFailure(transport: .bredr, reason: .pageTimeout)
        }
    }

    @Test("a burst of RSSI updates during discovery reaches subscribers coalesced, ending with the latest value")
    func rssiBurstCoalesced() async throws {
        let bluez = try await worldWithSpeaker(configuration: .init(noisyChangeInterval: .milliseconds(500)))
        defer { Task { await bluez.stop() } }
        let collected = Task {
            var count = 0
            for await event in bluez.events {
                guard case .deviceChanged(let device) = event, device.address == speaker else { continue }
                count += 1
                if device.rssi == -40 { return count }
            }
            return count
        }
        let markers = bluez.client.events()
        for rssi in stride(from: -99, through: -40, by: 1) {
            try await bluez.mock("UpdateRSSI", .objectPath(speakerPath), .int16(Int16(rssi)))
        }
        // BlueZ's signals arrive in order: once a later device shows up, the whole burst is in.
        let marker = try BluetoothAddress("11:22:33:44:55:77")
        try await bluez.mock("AddSpeaker", .string("hci0"), .string(marker.description), .string("Marker"))
        _ = await nextEvent(markers) { if case .deviceAdded(let d) = $0 { d.address == marker } else { false } }
        let done = Task<Int, any Error> { await collected.value }
        await advanceUntilDone(bluez.clock, by: .milliseconds(500), done)
        let deliveries = try await done.value
        #expect(deliveries >= 1)
        #expect(deliveries <= 3, "60 RSSI changes became \(deliveries) events")
        #expect(try await bluez.client.device(speaker)?.rssi == -40)
    }
}
