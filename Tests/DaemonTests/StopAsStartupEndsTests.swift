import BlueZ
import Clocks
@testable import Daemon
import TestSupport
import Testing

/// SIGTERM or Ctrl-C arriving just as start-up ends: the launcher has told the daemon a stop was
/// asked for (and said "stopping: SIGINT received"), but start-up's task is not cancelled yet when
/// its last step finishes. Seen on a busy machine through a real pty: the start-up summary came
/// after the stop line.
@Suite("A stop asked for as start-up ends")
struct StopAsStartupEndsTests {
    @Test("start-up that ends after the stop was asked for sums nothing up: 'stopping: … received' stays the last word")
    func noSummaryAfterTheStop() async throws {
        let scene = try await InboundDuringStartupConnectTests.startupPagingTheSpeaker()
        let (speaker, bluez, daemon, clock, journal, started) = (scene.speaker, scene.bluez, scene.daemon, scene.clock, scene.journal, scene.started)

        // The signal: the launcher tells the daemon first, then logs its line; the service group
        // has not cancelled start-up yet when the speaker connects and start-up's steps end.
        await daemon.stopRequested()
        let saidBefore = journal.all.count
        await bluez.updateDevice(speaker) { $0.connected = true }
        _ = try await clock.advance(by: .milliseconds(100), atMost: .seconds(20), until: "start-up has ended") { started.isSet }
        #expect(daemon.gate.isReached(.playbackReady), "start-up itself went through")
        let after = journal.all.dropFirst(saidBefore)
        let summary = after.filter { $0.contains("start-up (") && $0.contains(" took ") }
        #expect(summary.isEmpty, "said after the stop was asked for: \(summary)")
        let readiness = after.filter { $0.contains("ready to play") }
        #expect(readiness.isEmpty, "readiness changes after the stop was asked for: \(readiness)")
        await daemon.shutdown()
        withExtendedLifetime(scene) {}
    }
}
