import Foundation
import MIDI
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// Issue 24 item 2 as a person meets it, through the real `speakerd` and `composer-cli` on a
/// private bus with the fake BlueZ: the known speaker walks out of reach, speakerd's backoff grows
/// (`reconnect_max_seconds = 60`), `composer-cli status` counts the time to the next try down
/// when asked, and a `play` given once the speaker is back tries it at once instead of waiting
/// out the backoff.
///
/// Real time throughout (no test clock): the eager backoff is ~1, 2, 4, 8 s, so the next try is
/// 10 s or more away after about 15 s.
@Suite("A play wakes the reconnect: speakerd and composer-cli", .serialized)
struct PlayWakesReconnectEndToEndTests {
    static let flip = DaemonWorld.flip

    /// The seconds in composer-cli status's "Status:    JBL Flip 5 is out of reach; retrying in N s".
    static func retrySeconds(inStatus output: String) -> Int? {
        let prefix = "Status:    JBL Flip 5 is out of reach; retrying in "
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }), line.hasSuffix(" s") else {
            return nil
        }
        return Int(line.dropFirst(prefix.count).dropLast(2))
    }

    /// `composer-cli status`, piped, as a person types it; returns its output.
    static func status(_ address: String) async throws -> String {
        let run = try await ExecutableRun.run("composer-cli", ["status", "--bus", address])
        #expect(run.status == 0, "composer-cli status failed: \(run.standardError)")
        return run.standardOutput
    }

    /// Once the known speaker is connected at start, it walks out of reach (the link times out,
    /// every page goes unanswered) and speakerd's backoff grows (~1, 2, 4, 8 s, then ~16 s) until `composer-cli status` names a
    /// next try 10 s or more away: those seconds, when status was asked, and what it printed.
    static func outOfReachUntilTheBackoffIsLong(_ fake: DaemonWorld, _ address: String, _ client: SpeakerdDBusClient) async throws
        -> (seconds: Int, at: ContinuousClock.Instant, output: String) {
        try await eventually("the known speaker is connected at start") {
            try await client.status().readiness == "playbackReady"
        }
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        try await fake.dropLink(reason: "Timeout")
        var first: (seconds: Int, at: ContinuousClock.Instant, output: String)?
        let deadline = ContinuousClock.now + .seconds(30)
        var seen: [Int] = []
        while first == nil, ContinuousClock.now < deadline {
            let asked = ContinuousClock.now
            let output = try await Self.status(address)
            if let seconds = Self.retrySeconds(inStatus: output) {
                seen.append(seconds)
                if seconds >= 10 { first = (seconds, asked, output) }
            }
            if first == nil { try await Task.sleep(for: .milliseconds(300)) }
        }
        let long = try #require(first, "status never said the next try is 10 s or more away; it said \(seen)")
        #expect(long.output.contains("Speaker:   JBL Flip 5 (\(Self.flip.address)), not connected"), "\(long.output)")
        return long
    }

    /// speakerd (writing songs to a WAV) with Flip remembered, connected at start and then out of
    /// reach until its backoff is long (`outOfReachUntilTheBackoffIsLong`): `body` gets the world,
    /// the bus, a client, that long wait, the WAV's path and the C major scale's.
    static func withSpeakerOutOfReach(
        _ body: @escaping @Sendable (_ fake: DaemonWorld, _ address: String, _ client: SpeakerdDBusClient,
                                     _ long: (seconds: Int, at: ContinuousClock.Instant, output: String),
                                     _ wav: String, _ songPath: String) async throws -> Void
    ) async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        let wav = fake.state.path + "/song.wav"
        let songPath = try GatedPlayEndToEndTests.song()
        try await TruthfulReadinessEndToEndTests().withSpeakerd(fake, config: "reconnect_max_seconds = 60\n", output: wav) { address, client in
            let long = try await Self.outOfReachUntilTheBackoffIsLong(fake, address, client)
            try await body(fake, address, client, long, wav, songPath)
        }
    }

    @Test("""
        the speaker out of reach with a long backoff: status counts the next try down when asked, and a play given \
        once the speaker is back pages it at once and the song plays within seconds, not after the backoff
        """)
    func playWakesTheReconnect() async throws {
        try await Self.withSpeakerOutOfReach { fake, address, client, long, wav, songPath in

            // Two seconds later the countdown has moved on by about as much: computed when asked,
            // not the delay armed at the last failure.
            try await Task.sleep(for: .seconds(2))
            let askedAgain = ContinuousClock.now
            let later = try await Self.status(address)
            let second = try #require(Self.retrySeconds(inStatus: later), "the second status names no next try: \(later)")
            let elapsed = (askedAgain - long.at) / .seconds(1)
            #expect(second < long.seconds, "the countdown stood still: \(long.seconds) s, then \(second) s \(elapsed) s later")
            #expect(Double(long.seconds - second) >= elapsed - 1.5 && Double(long.seconds - second) <= elapsed + 1.5,
                    "counted down \(long.seconds - second) s in \(elapsed) s")

            // The speaker is switched on again; BR/EDR speakers do not advertise, so nothing
            // re-arms the reconnect but the person's play.
            try await fake.setConnectBehavior(Self.flip, "ok")
            let pagesBefore = try await fake.calls("Connect")
            let asked = ContinuousClock.now
            let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--bus", address])
            let answeredAfter = ContinuousClock.now - asked
            #expect(played.status == 0, "composer-cli play failed: \(played.standardError)")
            #expect(played.standardOutput.hasPrefix("Status:    Playing test-c-major-scale.mid on JBL Flip 5\n"),
                    "\(played.standardOutput)")
            // The backoff's own try was still `second` s away; the play did not wait for it.
            #expect(answeredAfter < .seconds(5), "play took \(answeredAfter); the backoff's try was \(second) s away")
            let status = try await client.status()
            #expect(status.playback.state == "playing" && status.playback.file == "test-c-major-scale.mid", "\(status.playback)")
            #expect(status.speaker?.connected == true)
            #expect(try await fake.calls("Connect") == pagesBefore + 1, "the play paged the speaker once, at once")

            try await eventually("the song has played to its end", within: .seconds(30)) {
                let state = try await client.status().playback.state
                return state != "waiting" && state != "playing"
            }
            try expectWholeScaleInTune(wav: wav, song: try MIDIFileReader.read(contentsOfFile: songPath))
        }
    }

    @Test("""
        a play --wait given while the speaker is still out of reach pages it at once and every few seconds while it \
        waits; switched on, the speaker is tried again within about 3 s and the song plays to its end
        """)
    func waitingPlayRetriesEveryFewSeconds() async throws {
        try await Self.withSpeakerOutOfReach { fake, address, client, long, wav, songPath in
            let backoffTryAt = long.at + .seconds(long.seconds)
            let pagesBefore = try await fake.calls("Connect")
            let asked = ContinuousClock.now
            let played = try await ExecutableRun.run("composer-cli", ["play", "--wait", songPath, "--bus", address]) { _ in
                // Still off: paged at once all the same, and the song waits.
                try await eventually("the play pages the speaker at once", within: .seconds(2)) {
                    try await fake.calls("Connect") == pagesBefore + 1
                }
                try await eventually("the song waits for the speaker") { try await client.status().playback.state == "waiting" }
                // Still off a while longer: tried again a few seconds later, not after the backoff.
                try await eventually("the speaker is tried again while the play waits", within: .seconds(5)) {
                    try await fake.calls("Connect") == pagesBefore + 2
                }
                let secondPage = ContinuousClock.now - asked
                #expect(secondPage >= .seconds(2) && secondPage < .seconds(5), "the second try came \(secondPage) after the play")
                // Switched on now (without advertising): the next spaced try connects it.
                try await fake.setConnectBehavior(Self.flip, "ok")
                let switchedOn = ContinuousClock.now
                try await eventually("the song plays", within: .seconds(6)) { try await client.status().playback.state == "playing" }
                let startedAfter = ContinuousClock.now - switchedOn
                #expect(startedAfter < .milliseconds(4_500), "the song started \(startedAfter) after the speaker was back")
                #expect(ContinuousClock.now < backoffTryAt, "the song started only when the backoff's own try was due")
                #expect(try await fake.calls("Connect") == pagesBefore + 3, "one more page, and it connected")
            }
            #expect(played.status == 0, "composer-cli play --wait failed: \(played.standardError)")
            #expect(played.standardOutput.hasPrefix("Status:    Playing test-c-major-scale.mid on JBL Flip 5\n"),
                    "\(played.standardOutput)")
            #expect(played.standardOutput.hasSuffix("\ntest-c-major-scale.mid finished\n"), "\(played.standardOutput)")
            try expectWholeScaleInTune(wav: wav, song: try MIDIFileReader.read(contentsOfFile: songPath))
        }
    }
}
