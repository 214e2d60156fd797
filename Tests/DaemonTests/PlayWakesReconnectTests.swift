import Clocks
import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// A person asks to play while the known speaker is out of reach and speakerd's backoff has
/// grown long: the request wakes the reconnect instead of waiting out the timer.
extension LinkLossTests {
    @Test("""
        a play given while the speaker is out of reach tries it at once and every 3 s while it waits; \
        the song plays as soon as the speaker is back, not after the backoff
        """)
    func playWakesTheReconnect() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon(playback: true) { $0.playTimeout = .seconds(60) }
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        try await fake.dropLink(reason: "Timeout")
        let calls = try await outOfReachUntilTheBackoffIsLong(fake, daemon, clock)

        // Two seconds later, the play comes in; the speaker is still off: it is paged at once,
        // without the clock moving.
        await clock.advance(by: .seconds(2))
        let path = fake.state.path + "/held.mid"
        try Data(Self.heldNote(seconds: 5)).write(to: URL(fileURLWithPath: path))
        let file = try FileDescriptor.open(path, .readOnly)
        let play = Task { try await daemon.play(PlayRequest(file: file, displayName: "held.mid", queue: false)) }
        let paged = calls + 1
        try await eventually("the play pages the speaker at once") { try await fake.calls("Connect") == paged }
        try await eventually("that attempt failed") {
            if case .waiting? = await daemon.link.reconnectState { true } else { false }
        }
        // Switched on now: the next try comes 3 s after the last one, not after the long backoff.
        try await fake.setConnectBehavior(Self.flip, "ok")
        let waited = try await clock.advance(atMost: .seconds(5), until: "the speaker is tried again") {
            try await fake.calls("Connect") == paged + 1
        }
        #expect(waited <= .milliseconds(3100), "tried again after \(waited), not every few seconds")
        try await eventually("the speaker is back") { daemon.gate.isReached(.playbackReady) }
        let started = try await play.value
        #expect(started.message == "Playing held.mid on JBL Flip 5")
        await daemon.shutdown()
    }

    @Test("status counts the time to the next try down when asked, instead of repeating the delay armed earlier")
    func statusCountsDown() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon()
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        try await fake.dropLink(reason: "Timeout")
        _ = try await outOfReachUntilTheBackoffIsLong(fake, daemon, clock)
        let first = try #require(Self.retrySeconds(try await daemon.status().message))
        #expect(first > 10)
        await clock.advance(by: .seconds(5))
        #expect(Self.retrySeconds(try await daemon.status().message) == first - 5)
        let waitingFor = try #require(try await daemon.status().waitingFor)
        #expect(waitingFor.message == "JBL Flip 5 is out of reach; retrying in \(first - 5) s")
        await daemon.shutdown()
    }

    /// Lets the speaker's pages go unanswered until the next retry is more than 10 s off;
    /// returns how many `Connect` calls were made by then.
    func outOfReachUntilTheBackoffIsLong(_ fake: DaemonWorld, _ daemon: SpeakerdDaemon, _ clock: TestClock<Duration>) async throws -> Int {
        var calls = 1
        var secondsToNextTry = 0
        while secondsToNextTry <= 10 {
            calls += 1
            let expected = calls
            _ = try await clock.advance(atMost: .seconds(90), until: "retry \(expected)") { try await fake.calls("Connect") == expected }
            try await eventually("retry \(expected) failed") {
                if case .waiting? = await daemon.link.reconnectState { true } else { false }
            }
            try await eventually("the status names the next try") { Self.retrySeconds(try await daemon.status().message) != nil }
            secondsToNextTry = Self.retrySeconds(try await daemon.status().message) ?? 0
        }
        return calls
    }
}
