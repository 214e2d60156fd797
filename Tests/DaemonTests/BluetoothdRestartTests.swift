import Clocks
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// bluetoothd restarting under a running speakerd: org.bluez loses its owner (NameOwnerChanged),
/// the daemon says so, and once bluetoothd is back (knowing its adapter and the speaker, as a
/// real one re-reads them) the speaker is connected again without restarting speakerd.
@Suite("speakerd when bluetoothd restarts", .serialized)
struct BluetoothdRestartTests {
    static let flip = DaemonWorld.flip
    static let waitingForBlueZ = CompatibilityProblem.noBlueZ.description

    @Test("bluetoothd restarting while the speaker is connected: status says it is gone, then the speaker is reconnected")
    func restartWhileConnected() async throws {
        let (fake, daemon, _) = try await DaemonWorld.connectedDaemon()

        try await fake.world.stopBlueZ()
        try await eventually("the daemon notices bluetoothd is gone") { try await daemon.status().message == Self.waitingForBlueZ }
        let gone = try await daemon.status()
        #expect(gone.readiness == "bus")
        #expect(gone.speaker?.connected == false)

        try await fake.world.startBlueZ()
        try await eventually("the speaker is connected again") { daemon.gate.isReached(.speakerConnected) }
        #expect(try await fake.calls("Connect") == 1, "one Connect on the new bluetoothd")
        try await statusSays(daemon, "Ready: JBL Flip 5")
        let back = try await daemon.status()
        #expect(back.speaker == .init(address: Self.flip.address, name: "JBL Flip 5", connected: true))
        #expect(try fake.rememberedAddresses() == [Self.flip.address])
        await daemon.shutdown()
    }

    @Test("the moment bluetoothd is known gone, status no longer shows the speaker connected, even before the link reports its loss")
    func goneBeforeTheLinkSaysSo() async throws {
        let (fake, daemon, _) = try await DaemonWorld.connectedDaemon()
        #expect(try await daemon.status().speaker?.connected == true)
        // bluetoothd's name lost its owner; the link's own report of the loss has not come yet
        // (it did come second, now and then, in the scenario above).
        await daemon.update(.bluetooth(.blocked(.noBlueZ)))
        #expect(await daemon.inputs.link.connected, "the link's report came first after all")
        let gone = try await daemon.status()
        #expect(gone.message == Self.waitingForBlueZ)
        #expect(gone.speaker?.connected == false, "status says bluetoothd is gone and the speaker connected")
        await daemon.shutdown()
        withExtendedLifetime(fake) {}  // its fake bluetoothd runs until here
    }

    @Test("bluetoothd restarting while a Connect is in flight: the hung call ends, and the speaker connects on the new bluetoothd")
    func restartWhileConnecting() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        // The speaker pages slowly: Connect is not answered until bluetoothd goes away.
        try await fake.setConnectBehavior(Self.flip, "hang")
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        let started = daemon.startInBackground()
        try await eventually("Connect is in flight") { try await fake.calls("Connect") == 1 }
        #expect(try await daemon.status().message == "Connecting to JBL Flip 5…")

        try await fake.world.stopBlueZ()
        try await eventually("the daemon notices bluetoothd is gone") { try await daemon.status().message == Self.waitingForBlueZ }
        #expect(!daemon.gate.isReached(.speakerConnected))

        try await fake.world.startBlueZ()
        // The failed attempt armed a backoff timer; moving time lets it run if the restart alone did not.
        _ = try await clock.advance(atMost: .seconds(10), until: "the speaker is connected on the new bluetoothd") {
            daemon.gate.isReached(.speakerConnected)
        }
        #expect(try await fake.calls("Connect") >= 1)
        try await eventually("start-up has finished") { started.isSet }
        try await statusSays(daemon, "Ready: JBL Flip 5")
        #expect(try await daemon.status().speaker?.connected == true)
        await daemon.shutdown()
    }

    @Test("a quick bluetoothd restart (gone and back at once) ends with the speaker connected on the new bluetoothd")
    func quickRestart() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon()

        try await fake.world.restartBlueZ()
        // The old link's loss may arm a backoff timer; moving time lets it run if it must.
        _ = try await clock.advance(atMost: .seconds(10), until: "the speaker is connected on the new bluetoothd") {
            try await fake.calls("Connect") >= 1 && daemon.gate.isReached(.speakerConnected)
        }
        try await statusSays(daemon, "Ready: JBL Flip 5")
        await daemon.shutdown()
    }
}
