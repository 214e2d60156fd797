import AsyncSignals
import Clocks
@testable import ComposerCLIKit
@testable import SpeakerdAPI
import TestSupport
import Testing

@Suite("composer-cli play --wait follows the song to its end")
struct PlaybackWaiterTests {
    static func playing(_ file: String, at position: Double) -> StatusReport.Playback {
        .init(state: "playing", file: file, positionSeconds: position, durationSeconds: 90)
    }

    @Test("without signals it polls the status until the song has finished, never faster than 4 times a second")
    func pollsUntilFinished() async throws {
        let control = ScriptedSpeakerd([Self.playing("song.mid", at: 0.5), Self.playing("song.mid", at: 1),
                                             .init(state: "paused", file: "song.mid", positionSeconds: 1, durationSeconds: 90),
                                             .idle])
        let waiter = PlaybackWaiter(control: control, clock: ImmediateClock(), pollInterval: .milliseconds(10))
        #expect(waiter.pollInterval == .milliseconds(250))
        var seen: [String] = []
        let outcome = try await waiter.wait(for: "song.mid") { seen.append($0.playback.state) }
        #expect(outcome.playedToEnd)
        #expect(outcome.sentence(for: "song.mid") == "song.mid finished")
        #expect(seen == ["playing", "playing", "paused", "idle"])
    }

    @Test("with PlaybackChanged signals a queued song waits through the one before it, reading status once per signal")
    func queuedSongFollowsSignals() async throws {
        let control = ScriptedSpeakerd([Self.playing("first.mid", at: 80), Self.playing("song.mid", at: 0),
                                             Self.playing("song.mid", at: 45), .idle])
        let (wakeUps, signal) = AsyncStream.makeStream(of: Void.self)
        for _ in 0..<3 { signal.yield() }
        // A clock that is never advanced: the waiter must not poll when it has signals.
        let waiter = PlaybackWaiter(control: control, clock: TestClock())
        var files: [String?] = []
        let outcome = try await waiter.wait(for: "song.mid", wakeUps: wakeUps) { files.append($0.playback.file) }
        #expect(outcome.playedToEnd)
        #expect(files == ["first.mid", "song.mid", "song.mid", nil])
        #expect(await control.statusCalls == 4)
    }

    @Test("a song stopped early or replaced ends the wait with a sentence saying so")
    func stoppedOrReplaced() async throws {
        let stopped = ScriptedSpeakerd([Self.playing("song.mid", at: 10),
                                             .init(state: "stopped", file: "song.mid", positionSeconds: 72, durationSeconds: 90)])
        let stoppedOutcome = try await PlaybackWaiter(control: stopped, clock: ImmediateClock()).wait(for: "song.mid")
        #expect(!stoppedOutcome.playedToEnd)
        #expect(stoppedOutcome.sentence(for: "song.mid") == "song.mid was stopped at 1:12")

        let replaced = ScriptedSpeakerd([Self.playing("song.mid", at: 10), Self.playing("other.mid", at: 0)])
        let replacedOutcome = try await PlaybackWaiter(control: replaced, clock: ImmediateClock()).wait(for: "song.mid")
        #expect(!replacedOutcome.playedToEnd)
        #expect(replacedOutcome.sentence(for: "song.mid") == "song.mid was replaced by other.mid")
    }
}
