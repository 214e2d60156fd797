@testable import ComposerCLIKit
import DBus
@testable import SpeakerdAPI
import TestSupport
import Testing

/// composer-cli's sentences that need no daemon to check: the pure parts behind `play --wait` and
/// the unknown-subcommand line. (`status` prints the daemon's own sentence: DaemonTests' DaemonPhaseTests.)
@Suite("composer-cli messages")
struct CLIMessageTests {
    @Test("play --wait exits 0 when the song finished or was stopped, 1 when it was replaced or lost")
    func waitOutcomes() {
        let status = SampleReports.paused
        #expect(PlaybackWaiter.Outcome.finished(status).endedAsAsked)
        #expect(PlaybackWaiter.Outcome.stopped(status).endedAsAsked)
        #expect(PlaybackWaiter.Outcome.stopped(status).sentence(for: "song.mid") == "song.mid was stopped at 1:12")
        #expect(!PlaybackWaiter.Outcome.replaced(by: "other.mid", status).endedAsAsked)
        #expect(!PlaybackWaiter.Outcome.failed(reason: "device gone", status).endedAsAsked)
        #expect(!PlaybackWaiter.Outcome.daemonRestarted(status).endedAsAsked)
    }

    static let known = ["play", "stop", "pause", "resume", "status", "scan", "connect", "disconnect", "forget",
                        "speakers", "startup", "doctor", "render", "help"]

    @Test("an unknown first word gets the nearest subcommand, when one is near", arguments: [
        ("stauts", "status"), ("conect", "connect"), ("disconect", "disconnect"), ("speaker", "speakers"),
        ("plya", "play"), ("rendr", "render"), ("frobnicate", nil), ("s", nil), ("sta", nil),
    ] as [(String, String?)])
    func suggestion(word: String, expected: String?) {
        let suggestion = SubcommandSuggestion(arguments: [word], known: Self.known)
        #expect(suggestion?.suggestion == expected)
    }

    @Test("known subcommands, options and an empty command line are left to the parser")
    func noSuggestion() {
        #expect(SubcommandSuggestion(arguments: ["status", "--json"], known: Self.known) == nil)
        #expect(SubcommandSuggestion(arguments: ["--versoin"], known: Self.known) == nil)
        #expect(SubcommandSuggestion(arguments: [], known: Self.known) == nil)
    }
}
