import BlueZ
import Clocks
@testable import Daemon
@testable import Readiness
import TestSupport
import Testing
@testable import Configuration

/// The speaker is switched on while start-up's `Connect` to it still pages (BlueZ answers a page
/// only after its timeout, or never): the speaker connects by itself, the link is up, and
/// start-up's step must end then, not when BlueZ finally answers or its 8 s budget runs out
/// (seen as "connectKnown timed out after 8.0 s" logged after the speaker was back in 1 s).
@Suite("A speaker that connects by itself while start-up pages it")
struct InboundDuringStartupConnectTests {
    /// An in-process daemon whose start-up pages the known speaker: its `Connect` is out and
    /// BlueZ does not answer it (a page answers only after its timeout, or never).
    struct PagingScene {
        let speaker: BluetoothAddress
        let bluez: FakeBlueZClient
        let daemon: SpeakerdDaemon
        let clock: TestClock<Duration>
        /// speakerd's log lines as journald gets them.
        let journal: Journal
        /// Set once start-up has ended.
        let started: DoneFlag
        /// Holds the state directory while the scene lasts.
        let state: TemporaryDirectory
    }

    static func startupPagingTheSpeaker() async throws -> PagingScene {
        let (speaker, bluez) = try LinkSignalOrderTests.flipPairedOnFakeBlueZ()
        await bluez.setBehaviour(.hang, for: speaker)  // paging: no answer until the call is given up
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip], in: state)
        let clock = TestClock<Duration>()
        let journal = Journal()
        let daemon = InProcessDaemon.unstarted(on: bluez, state: state, clock: clock, journal: journal)
        let started = daemon.startInBackground()
        try await eventually("start-up's Connect is out") { await bluez.calls.contains(.connect(speaker)) }
        return PagingScene(speaker: speaker, bluez: bluez, daemon: daemon, clock: clock, journal: journal, started: started, state: state)
    }

    @Test("start-up's connect step ends as soon as the speaker connects by itself, with no timeout and no warning")
    func inboundEndsTheStep() async throws {
        let scene = try await Self.startupPagingTheSpeaker()
        let (speaker, bluez, daemon, clock, journal, started) = (scene.speaker, scene.bluez, scene.daemon, scene.clock, scene.journal, scene.started)

        // The speaker is switched on and connects to the box by itself; our Connect still pages.
        await bluez.updateDevice(speaker) { $0.connected = true }
        let took = try await clock.advance(by: .milliseconds(100), atMost: .seconds(20), until: "start-up has ended") { started.isSet }
        #expect(took < .seconds(1), "start-up's step waited \(took) after the speaker was connected")
        let step = await daemon.startupTimeline?.entry(StartupScenarios.Step.connectKnown)
        #expect(step?.outcome == .ok, "\(String(describing: step?.outcome))")
        #expect(daemon.gate.isReached(.playbackReady))
        let warnings = journal.all.filter { $0.hasPrefix("<4>") || $0.hasPrefix("<3>") || $0.contains("timed out") }
        #expect(warnings.isEmpty, "\(warnings)")
        await daemon.shutdown()
        withExtendedLifetime(scene) {}
    }
}
