import BlueZ
import Clocks
@testable import Daemon
import Logging
import Systemd
import TestSupport
@testable import Configuration

/// A daemon in this process on a fake BlueZ client and a test clock, with Flip (or `known`)
/// remembered in its state file and a playback side that is always ready: the set-up of the link scenarios that
/// drive BlueZ's reports by hand. `start` returns once start-up has made it ready to play.
struct InProcessDaemon {
    let daemon: SpeakerdDaemon
    let clock: TestClock<Duration>
    /// Start-up's task; cancel it once the daemon is shut down.
    let startup: Task<Void, Never>
    /// Holds the state directory for as long as the scenario runs (removed when it goes).
    let state: TemporaryDirectory

    private struct ReadyPlayback: StandInPlayback {}

    /// A daemon on `bluez` that has not started: a null output, a playback side that is always
    /// ready, nothing remembered but what `state` holds, and its log lines kept in `journal` as
    /// journald gets them ("<4>…" for a warning): for the scenarios that watch start-up itself.
    static func unstarted(on bluez: FakeBlueZClient, state: TemporaryDirectory, clock: TestClock<Duration>,
                          journal: Journal) -> SpeakerdDaemon {
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { journal.record($0) } }
        return SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: ReadyPlayback()),
            notifier: nil, logger: logger)
    }

    static func start(on bluez: FakeBlueZClient, remembering known: [DaemonWorld.Speaker] = [DaemonWorld.flip])
        async throws -> InProcessDaemon {
        let state = TemporaryDirectory()
        DaemonWorld.remember(known, in: state)
        let clock = TestClock<Duration>()
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: ReadyPlayback()),
            notifier: nil, logger: Logger(label: "test.speakerd"))
        let startup = Task { await daemon.start() }
        _ = try await clock.advance(atMost: .seconds(30), until: "ready with the known speaker") { daemon.gate.isReached(.playbackReady) }
        return InProcessDaemon(daemon: daemon, clock: clock, startup: startup, state: state)
    }
}
