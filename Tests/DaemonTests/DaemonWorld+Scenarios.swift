import Clocks
import Testing
import TestSupport
@testable import Daemon
@testable import Configuration

/// Steps several daemon scenarios share: a daemon already connected to its known speaker, the
/// compatibility gate seen closed, and the same daemon connecting once the gate reopens.
extension DaemonWorld {
    /// A regular start on our template with the speaker connected, its `Connect` counted.
    static func connectedDaemon(playback: Bool = false, _ configure: (inout DaemonConfiguration) -> Void = { _ in })
        async throws -> (DaemonWorld, SpeakerdDaemon, TestClock<Duration>) {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [flip])
        fake.remember([flip])
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock, playback: playback, configure)
        // With playback, start-up's soundfont step runs as a polite block of the readiness gate,
        // spaced on this test clock: awaiting `start()` without moving the clock waits for ever.
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(3), until: "start-up has finished") { started.isSet }
        try await eventually("the speaker is connected") { daemon.gate.isReached(.speakerConnected) }
        #expect(try await fake.calls("Connect") == 1)
        return (fake, daemon, clock)
    }

    /// The compatibility gate is closed: the status says `message`, and the API answers at `bus`.
    func expectBlocked(_ daemon: SpeakerdDaemon, saying message: String,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let blocked = try await client().status()
        #expect(blocked.message == message, sourceLocation: sourceLocation)
        #expect(blocked.readiness == "bus", "the API answers while the gate is closed", sourceLocation: sourceLocation)
    }

    /// The gate has reopened: with the test clock moving, the same daemon connects its speaker
    /// and says it is ready.
    func expectResumesAndConnects(_ daemon: SpeakerdDaemon, _ clock: TestClock<Duration>) async throws {
        _ = try await clock.advance(atMost: .seconds(5), until: "the speaker is connected") {
            daemon.gate.isReached(.speakerConnected)
        }
        try await statusSays(daemon, "Ready: JBL Flip 5")
    }
}
