import Clocks
import Foundation
import MIDI
@testable import Playback
@testable import PlaybackService
@testable import SpeakerdAPI
import TestSupport
import Testing

/// A composer's live control on a song that was played with controls of its own (`play --tempo`,
/// `--loop A-B --loop-count N`): the control starts from where the written song is, not from the
/// arranged timeline's seconds, and a counted loop plays the passes it has left, then ends.
@Suite("Live controls on a song played with controls")
struct LiveControlOnArrangedSongTests {
    /// Four bars of 4/4 at 120 BPM (2 s a bar), a piano note at the start of each.
    static let fourBars = ClientSongs.smf(program: 0, notes: [(60, 0, 1.9), (62, 2, 3.9), (64, 4, 5.9), (65, 6, 7.9)], end: 8)

    static func play(_ harness: PlayerHarness, _ arrangement: ArrangementText) async throws {
        var (request, _) = try harness.request(Self.fourBars, named: "four.mid")
        request.arrangement = arrangement
        _ = try await harness.player.play(request)
    }

    @Test("'play --tempo 50%' then 'transpose 2' four seconds in goes on from the written song's second 2, not its second 4")
    func controlStartsWhereTheWrittenSongIs() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await Self.play(harness, ArrangementText(tempo: "50%"))
        // 4.1 s, clear of bar 2's first beat (written second 2): a control taken a few
        // milliseconds before the render caught up with the clock landed in bar 1 (seen in CI).
        await harness.play(for: .milliseconds(4100))
        // The status tells the written song's place (4.1 s at half tempo is its second 2.05),
        // with its bar and the tempo heard, before any live control as after one.
        #expect(await harness.eventually { await harness.position() >= 2.02 }, "the song did not reach the written 2.05 s")
        let before = await harness.player.snapshot()
        #expect(before.musicalPosition?.bar == 2 && before.musicalPosition?.bpm == 60, "\(String(describing: before.musicalPosition))")
        #expect(before.controls?.tempo == "50%", "\(String(describing: before.controls))")

        let after = try await harness.player.adjust(.transpose(2))
        let place = try #require(after.positionSeconds)
        #expect(place >= 1.9 && place < 2.2, "after the control the song is at \(place) s of the written song")
        #expect(after.musicalPosition?.bar == 2, "\(String(describing: after.musicalPosition))")
        #expect(after.musicalPosition?.bpm == 60, "the song plays on at half its written 120 BPM")
        await harness.player.stop()
    }

    @Test("a loop of three passes keeps its count through 'tempo 200%' in the second pass: the passes left play faster, then the song ends")
    func countedLoopKeepsItsCount() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        let text = ArrangementText(loop: "2-3", loopCount: 3)
        let written = try MIDIFileReader.read(Self.fourBars)
        let arrangement = try text.arrangement()
        let whole = try arrangement.arrange(written).durationSeconds
        try await Self.play(harness, text)

        // Into the second pass, mid-bar 3: the first pass of bars 2-3 (4 s; the arranged song
        // starts at the loop), and 3 s into the second, the written second 5. Not on a bar's
        // first beat, where a render a few milliseconds behind still reads the bar before.
        #expect(abs(whole - 12) < 0.01, "three passes of bars 2-3: \(whole) s")
        let into = 7.0
        await harness.play(for: .milliseconds(Int64(into * 1000)))
        // The status tells the place in the written song: in the section, as in every pass.
        let place = arrangement.songSeconds(atArranged: into, in: written)
        #expect(place >= 2 && place < 6)
        #expect(await harness.eventually { await harness.position() >= place - 0.05 })
        let inSection = await harness.player.snapshot()
        #expect(inSection.musicalPosition?.bar == 3, "at \(String(describing: inSection.positionSeconds)) s: \(String(describing: inSection.musicalPosition))")
        let timeline = into
        #expect(arrangement.passesLeft(atArranged: timeline, in: written) == 2)

        let faster = try await harness.player.adjust(.tempo(.percent(200)))
        #expect(faster.controls?.loop == "2-3", "the loop is gone from status: \(String(describing: faster.controls))")
        // What is left, at twice the speed: the rest of this pass and one more.
        let left = (whole - timeline) / 2
        await harness.play(for: .milliseconds(Int64((left + 3) * 1000)))
        let ended = await harness.eventually { await harness.activity() == .idle }
        let now = await harness.player.snapshot()
        #expect(ended, "the loop forgot its count and goes on: \(now)")
        let heard = try harness.wav(0).seconds
        #expect(heard > timeline + left - 0.1 && heard < timeline + left + 2.5,
                "heard \(heard) s: \(timeline) s before the control and \(left) s after it (plus the release)")
    }

    @Test("a loop set live repeats until it is turned off; 'loop off' lets the song play on to its end")
    func liveLoopRepeats() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await Self.play(harness, ArrangementText())
        _ = try await harness.player.adjust(.loop(LoopSection(parsing: "1-2")))
        await harness.play(for: .seconds(9))
        #expect(await harness.activity() == .playing, "a live loop ended by itself")
        let place = await harness.position()
        #expect(place >= 0 && place < 4.01, "the live loop is at \(place) s, outside bars 1-2")

        _ = try await harness.player.adjust(.loop(nil))
        await harness.play(for: .seconds(11))
        #expect(await harness.eventually { await harness.activity() == .idle }, "after 'loop off' the song did not end")
    }
}
