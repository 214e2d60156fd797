import MIDI
@testable import Playback
import Testing

/// How many passes of a counted loop are left at a place on the arranged song's timeline: what a
/// live control lays the song out with again, so `--loop-count N` survives it.
@Suite("The passes a counted loop has left")
struct LoopPassesLeftTests {
    /// Four bars of 4/4 at 120 BPM (2 s a bar).
    static let song = ArrangementAudioTests.song(ArrangementAudioTests.note(0, 60, 0, 1), bars: 4)
    /// Bars 2-3: 2 s to 6 s of the song, a pass of 4 s.
    static let section = LoopSection(start: .bars(MIDIBarPosition(bar: 2)), end: .bars(MIDIBarPosition(bar: 4)))

    @Test("from the loop's start: every pass is left until the first ends, then one fewer each pass, never fewer than the last")
    func countsDownPassByPass() {
        let loop = SongArrangement(loop: Self.section, loopPasses: 3)
        #expect(loop.passesLeft(atArranged: 0, in: Self.song) == 3)
        #expect(loop.passesLeft(atArranged: 3.9, in: Self.song) == 3)
        #expect(loop.passesLeft(atArranged: 4, in: Self.song) == 2)
        #expect(loop.passesLeft(atArranged: 7.9, in: Self.song) == 2)
        #expect(loop.passesLeft(atArranged: 8.5, in: Self.song) == 1)
        #expect(loop.passesLeft(atArranged: 30, in: Self.song) == 1, "past the end the last pass is what is left")
    }

    @Test("a way in before the section, a count-in and a tempo move where the passes begin on the arranged timeline")
    func wayInCountInAndTempo() {
        // From bar 1: the way in is bars 1-3 (6 s), then two more passes; one bar of count-in
        // (2 s at the written tempo); all at 200 %: everything takes half as long.
        let loop = SongArrangement(from: .bars(MIDIBarPosition(bar: 1)), loop: Self.section, loopPasses: 3,
                                   tempo: .percent(200), countInBars: 1)
        #expect(loop.passesLeft(atArranged: 0.5, in: Self.song) == 3, "in the count-in")
        #expect(loop.passesLeft(atArranged: 3.9, in: Self.song) == 3, "in the way in (1 s count-in + 3 s)")
        #expect(loop.passesLeft(atArranged: 4.1, in: Self.song) == 2)
        #expect(loop.passesLeft(atArranged: 6.1, in: Self.song) == 1)
    }

    @Test("a live control keeps a counted loop's passes left; 'loop' given live, even for the same section, repeats until 'loop off'")
    func liveControlsAndTheCount() throws {
        let counted = SongArrangement(loop: Self.section, loopPasses: 3)
        #expect(try LiveControl.tempo(.percent(150)).applied(to: counted, at: 3, in: Self.song, passesLeft: 2).loopPasses == 2)
        #expect(try LiveControl.seek(.seconds(2.5)).applied(to: counted, at: 3, in: Self.song, passesLeft: 2).loopPasses == 2)
        let again = try LiveControl.loop(Self.section).applied(to: counted, at: 3, in: Self.song, passesLeft: 2)
        #expect(again.loopsUntilTurnedOff)
        let outside = try LiveControl.seek(.seconds(7)).applied(to: counted, at: 3, in: Self.song, passesLeft: 2)
        #expect(outside.loop == nil && outside.loopPasses == 1, "a seek outside the section turns the loop off")
    }

    @Test("no loop, or a loop until it is turned off, has no count to keep")
    func nothingToCount() {
        #expect(SongArrangement(tempo: .percent(80)).passesLeft(atArranged: 1, in: Self.song) == nil)
        #expect(SongArrangement(loop: Self.section, loopPasses: 0).passesLeft(atArranged: 1, in: Self.song) == nil)
    }
}
