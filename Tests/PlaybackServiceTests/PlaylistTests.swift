import Foundation
@testable import PlaybackService
import SpeakerdAPI
import TestSupport
import Testing

/// A playlist on the player: the queue with each song's length, `skip` to the next song, `clear`
/// to drop the rest, each judged on what reached the output.
@Suite("Playlist: the queue, skip and clear")
struct PlaylistTests {
    @Test("the queue lists each waiting song with its length; skip ends the current song where it is and the next one plays whole")
    func skipPlaysTheNextSong() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        let (second, _) = try harness.request(ClientSongs.threeNotes, named: "three.mid", queue: true)
        _ = try await harness.player.play(second)
        let (third, _) = try harness.request(ClientSongs.threeNotes, named: "again.mid", queue: true)
        let queued = try await harness.player.play(third)
        #expect(queued.file == "long.mid")
        #expect(queued.queued.map(\.file) == ["three.mid", "again.mid"])
        #expect(queued.queued.allSatisfy { abs($0.durationSeconds - 3) < 0.01 }, "each song's length: \(queued.queued)")

        await harness.play(for: .seconds(1))
        let skipped = try await harness.player.skip()
        #expect(skipped.file == "three.mid", "the next song is the current one now")
        #expect(skipped.queued.map(\.file) == ["again.mid"])
        let cut = try harness.wav(0)
        #expect(cut.seconds < 2, "the skipped song went on for \(cut.seconds) s of its 10 s")

        // `clear` drops the rest; the song playing now plays to its end, and nothing follows it.
        let cleared = await harness.player.clearQueue()
        #expect(cleared.file == "three.mid" && cleared.queued.isEmpty)
        await harness.play(for: .seconds(5))
        #expect(await harness.eventually { await harness.activity() == .idle })
        let whole = try harness.wav(1)
        // Its three notes, each where the song has it. (The first 30 ms also hold a fading tail
        // of the skipped song, about -35 dBFS: left for the note on the issue, not hidden here.)
        let onsets = WAVAnalysis.onsets(whole.monoFloat, sampleRate: whole.sampleRate).filter { $0 > 0.1 }
        #expect(onsets.count == 3 && zip(onsets, [0.5, 1.5, 2.5]).allSatisfy { abs($0 - $1) < 0.05 },
                "the next song played whole: onsets at \(onsets)")
        #expect(throws: (any Error).self, "the cleared song never played") { try harness.wav(2) }
    }

    @Test("skip with nothing playing says so; skip of the last song stops it")
    func skipWithoutANextSong() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        await #expect(throws: PlaybackServiceError.nothingPlaying(operation: "skip")) { try await harness.player.skip() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "only.mid")
        await harness.play(for: .milliseconds(500))
        let after = try await harness.player.skip()
        #expect(after.activity == .stopped && after.queued.isEmpty, "\(after)")
    }
}
