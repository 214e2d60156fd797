import Foundation
import Testing
import TestSupport
@testable import Daemon
import Logind

/// The daemon's connects and scans under logind's sleep delay lock.
extension DaemonIntegrationTests {
    @Test("a scan holds a logind sleep delay lock while it runs and gives it back when it ends")
    func scanHoldsSleepLock() async throws {
        let fake = try await knownSpeakerWorld()
        let logind = try await FakeLogind.start(on: fake.world)
        let daemon = fake.makeDaemon()
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)

        let scan = Task { try await daemon.scan() }
        let held = try await logind.inhibitors(settlingAt: 1)
        #expect(held.map { Array($0.prefix(2)) + [$0.last ?? ""] } == [["sleep", "speakerd", "delay"]])
        _ = try await scan.value
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
        await daemon.shutdown()
        _ = fake
    }

    @Test("without logind on the bus the sleep lock is a silent no-op: the speaker still connects")
    func noLogindIsNoOp() async throws {
        let fake = try await knownSpeakerWorld()
        let daemon = fake.makeDaemon()
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        let inhibitorState = await daemon.sleepInhibitor?.state
        guard case .unavailable? = inhibitorState else {
            Issue.record("expected the inhibitor to say logind is unavailable, got \(String(describing: inhibitorState))")
            return
        }
        await daemon.shutdown()
        _ = fake
    }
}
