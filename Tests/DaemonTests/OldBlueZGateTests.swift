import Clocks
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The compatibility gate's "BlueZ too old": speakerd started against a BlueZ 4 bluetoothd says
/// what it found and what it needs, starts nothing else, and resumes on its own when a BlueZ 5
/// takes org.bluez (the package was upgraded and bluetooth.service restarted).
@Suite("speakerd's compatibility gate: a BlueZ too old", .serialized)
struct OldBlueZGateTests {
    static let flip = DaemonWorld.flip
    static let tooOld = "BlueZ 4 (org.bluez.Manager) found; speakerd needs BlueZ 5.30 or newer (upgrade the bluez package)"
    static let bluez4Template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../FakeBlueZ/bluez4_mock.py").standardized.path
    static let before530Template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../FakeBlueZ/bluez5_before530_mock.py").standardized.path

    @Test("BlueZ 4 blocks start-up with a status that says to upgrade; a BlueZ 5 replacing it connects the speaker without a restart")
    func bluez4ThenUpgraded() async throws {
        let world = try await FakeBusWorld.start(template: Self.bluez4Template)
        let fake = DaemonWorld(world: world, template: .stock, state: TemporaryDirectory(), control: try await world.connect())
        fake.remember([Self.flip])
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()

        try await fake.expectBlocked(daemon, saying: Self.tooOld)
        #expect(await daemon.lifecycle == .blocked(.blueZTooOld(found: "BlueZ 4 (org.bluez.Manager)", needed: "5.30")))
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.abortReason == Self.tooOld)
        #expect(timeline.entry(StartupScenarios.Step.adapter)?.outcome != .ok, "the rest of start-up was cancelled")
        #expect(timeline.entry(StartupScenarios.Step.connectKnown)?.outcome != .ok)

        // The bluez package is upgraded: bluetoothd 5 takes org.bluez and lists the paired speaker.
        try await world.stopBlueZ()
        try await world.startBlueZ(template: "bluez5")
        try await fake.addAdapter()
        try await fake.addSpeaker()
        try await fake.expectResumesAndConnects(daemon, clock)
        #expect(try await daemon.status().speaker?.connected == true)
        #expect(try await fake.calls("Connect") == 1)
        await daemon.shutdown()
    }

    @Test("a BlueZ 5 before 5.30 is recognised when its adapter is plugged in: the status then says to upgrade, not to plug one in")
    func bluez5Before530() async throws {
        let world = try await FakeBusWorld.start(template: Self.before530Template)
        let fake = DaemonWorld(world: world, template: .stock, state: TemporaryDirectory(), control: try await world.connect())
        fake.remember([Self.flip])
        let daemon = fake.makeDaemon(clock: TestClock<Duration>())
        await daemon.start()
        #expect(try await fake.client().status().message == "Waiting for a Bluetooth adapter to be plugged in")

        try await fake.addAdapter()
        try await statusSays(daemon, "BlueZ 5 older than 5.30 (org.bluez.Adapter1 has no SetDiscoveryFilter) found; "
            + "speakerd needs BlueZ 5.30 or newer (upgrade the bluez package)")
        #expect(daemon.gate.isReached(.bus) && !daemon.gate.isReached(.adapter), "nothing past the gate started")
        await daemon.shutdown()
    }
}
