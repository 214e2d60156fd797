import AudioPath
import BlueZ
import Clocks
@testable import Daemon
import DBus
import Logging
@testable import PlaybackService
import Synchronization
import TestSupport
import Testing
import SpeakerdAPI
@testable import Configuration

/// A problem with the output itself (a `file:` output whose directory is missing, a sound server
/// that cannot be reached) is no less true when the daemon turns to a speaker. While the audio
/// path's new follower looks, status keeps saying so rather than flickering to "Connecting…"
/// (which a `play` arriving then would wait on instead of failing at once). Seen in CI as a
/// flaky end-to-end status check.
@Suite("An output problem outlives the daemon turning to a speaker")
struct OutputProblemTests {
    /// The output cannot be written: the first follower of the audio path says so at once; every
    /// later one (for the speaker start-up turns to) is slow to say it again, until `answer()`.
    final class UnwritableOutput: StandInPlayback, StandInAudio, Sendable {
        static let problem = AudioPathReport(.notReady(.outputUnusable("cannot write /out/song.wav: no such directory")))
        private let followers = Mutex<[AsyncStream<AudioPathReport>.Continuation]>([])

        func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
            let (stream, continuation) = AsyncStream.makeStream(of: AudioPathReport.self)
            let first = followers.withLock { list in
                defer { list.append(continuation) }
                return list.isEmpty
            }
            if first { continuation.yield(Self.problem) }
            return stream
        }

        /// Followers still looking (all but the first, until answered).
        var looking: Int { followers.withLock { max(0, $0.count - 1) } }

        func answer() {
            for follower in followers.withLock({ $0 }) { follower.yield(Self.problem) }
        }
    }

    @Test("while the audio path to the chosen speaker is looked at again, status keeps the output's problem, not 'Connecting…'")
    func outputProblemStaysThroughTheTargetChange() async throws {
        let clock = TestClock<Duration>()
        let playback = UnwritableOutput()
        let state = TemporaryDirectory()
        let (_, bluez) = try LinkSignalOrderTests.flipPairedOnFakeBlueZ()
        DaemonWorld.remember([DaemonWorld.flip], in: state)
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: playback, audio: playback),
            notifier: nil, logger: Logger(label: "test.speakerd"))
        let startup = Task { await daemon.start() }
        _ = try await clock.advance(atMost: .seconds(30), until: "the audio path to the Flip is being looked at again") {
            playback.looking > 0
        }

        let looking = try await daemon.status()
        #expect(looking.speaker?.address == DaemonWorld.flip.address)
        #expect(looking.waitingFor?.code == NotReadyReason.Code.outputUnusable.rawValue, "\(looking.message)")
        #expect(looking.message.hasPrefix("Cannot write /out/song.wav"), "\(looking.message)")

        // The new follower confirms it: still the output's problem, as the user was told all along.
        playback.answer()
        _ = try await clock.advance(atMost: .seconds(30), until: "the speaker is connected") { daemon.gate.isReached(.speakerConnected) }
        let answered = try await daemon.status()
        #expect(answered.message.hasPrefix("Cannot write /out/song.wav"), "\(answered.message)")
        await daemon.shutdown()
        startup.cancel()
    }
}
