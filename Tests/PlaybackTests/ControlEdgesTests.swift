import Foundation
import MIDI
import TestSupport
@testable import Playback
import Testing

/// The composer's controls at their edges: what a person may type by mistake, live or at play
/// time, is one refused line, and the same words mean the same thing in `play`, `render` and live.
@Suite("The composer's controls at their edges")
struct ControlEdgesTests {
    /// Four bars of 4/4 at 120 BPM (2 s a bar), a piano note at the start of each.
    static let song = ArrangementAudioTests.song((0..<4).flatMap { ArrangementAudioTests.note(0, 60, Double($0) * 2, Double($0) * 2 + 1) },
                                                 bars: 4)

    /// Four bars of 4/4 written at 120 BPM for the first two and 60 BPM from bar 3 (bars of 2 s,
    /// then 4 s), a note at the start of each.
    static let slowingSong: MIDISong = {
        let tempo = MIDITempoMap(division: .ticksPerQuarterNote(480), changes: [(0, 500_000), (480 * 8, 1_000_000)])
        let bars = MIDIBarMap(ticksPerQuarter: 480, tempo: tempo, meterChanges: [], endTick: 480 * 16)
        let starts = [0.0, 2, 4, 8]
        let events = starts.flatMap { ArrangementAudioTests.note(0, 60, $0, $0 + 1) }
        return MIDISong(events: events, durationSeconds: 12, bars: bars)
    }()

    @Test("a live loop that ends where it starts or before is refused, whatever the units, before any range is built from it")
    func invertedLiveLoops() throws {
        // As the player takes a control: applied where the song is, then laid out again.
        for text in ["3-2", "4-1", "3s-1s", "2:3-2:2", "4s-4s"] {
            let section = try LoopSection(parsing: text)
            #expect(throws: SongArrangementError.emptyLoop(section), "loop \(text)") {
                try LiveControl.loop(section).applied(to: SongArrangement(), at: 1, in: Self.song).arranged(Self.song)
            }
        }
        let refusal = try #require(try? LiveControl(name: "loop", value: "3-2"))
        #expect(throws: SongArrangementError.self) { try refusal.applied(to: SongArrangement(), at: 5, in: Self.song).arranged(Self.song) }
        #expect("\(SongArrangementError.emptyLoop(try LoopSection(parsing: "3-2")))" == "the loop 3-2 ends where it starts or before")
    }

    @Test("96bpm makes the opening tempo 96 and keeps the tempo map's shape: the same factor from bar 1, from bar 3, and live at bar 3")
    func beatsPerMinuteIsOneFactor() throws {
        let song = Self.slowingSong
        let fromStart = SongArrangement(tempo: .beatsPerMinute(96))
        #expect(fromStart.heardQuarterNotesPerMinute(of: song, atSeconds: 1) == 96)
        #expect(fromStart.heardQuarterNotesPerMinute(of: song, atSeconds: 5) == 48, "bar 3, written at 60, plays at 60 × 0.8")
        // --from 3 --tempo 96bpm is the same as --from 3 --tempo 80%, to the event.
        let fromBar3 = try SongArrangement(from: .bars(MIDIBarPosition(bar: 3)), tempo: .beatsPerMinute(96)).arrange(song)
        let asPercent = try SongArrangement(from: .bars(MIDIBarPosition(bar: 3)), tempo: .percent(80)).arrange(song)
        #expect(fromBar3.events.map(\.seconds) == asPercent.events.map(\.seconds))
        // Live at bar 3 (4 s into the written song): the song goes on exactly as `--from 4s` would render it.
        let live = try LiveControl.tempo(.beatsPerMinute(96)).applied(to: SongArrangement(), at: 4, in: song).arrange(song)
        let rendered = try SongArrangement(from: .seconds(4), tempo: .beatsPerMinute(96)).arrange(song)
        #expect(live.events.map(\.seconds) == rendered.events.map(\.seconds))
        #expect(live.durationSeconds == rendered.durationSeconds)
    }

    @Test("--to and a loop's end both include their bar: --from 2 --to 3 and --loop 2-3 play the same two bars")
    func oneBarConvention() throws {
        let toBar3 = try ArrangementText(from: "2", to: "3").arrangement().arrange(Self.song)
        #expect(toBar3.durationSeconds == 4, "bars 2 and 3, 2 s each")
        let loop = try ArrangementText(loop: "2-3").arrangement().arrange(Self.song)
        #expect(loop.durationSeconds == toBar3.durationSeconds)
        #expect(toBar3.events.map(\.seconds) == loop.events.map(\.seconds))
        // A beat or a time ends exactly where it says.
        #expect(try ArrangementText(from: "2", to: "3:3").arrangement().arrange(Self.song).durationSeconds == 3)
        #expect(try ArrangementText(from: "2", to: "5s").arrangement().arrange(Self.song).durationSeconds == 3)
        // The last bar is the last one named.
        #expect(try ArrangementText(to: "4").arrangement().arrange(Self.song).durationSeconds == 8)
    }

    @Test("a bar past the end is named as such, as a start, as an end, in a loop and in a seek")
    func barPastTheEnd() throws {
        let noBar5 = SongArrangementError.position(.noSuchBar(5, bars: 4))
        #expect(throws: noBar5) { try ArrangementText(from: "5").arrangement().arrange(Self.song) }
        #expect(throws: noBar5) { try ArrangementText(to: "5").arrangement().arrange(Self.song) }
        #expect(throws: noBar5) { try ArrangementText(loop: "2-5").arrangement().arrange(Self.song) }
        #expect(throws: noBar5) { try ArrangementText(loop: "5-5").arrangement().arrange(Self.song) }
        #expect(throws: noBar5) { try LiveControl.seek(.bars(MIDIBarPosition(bar: 5))).applied(to: SongArrangement(), at: 1, in: Self.song) }
        #expect("\(noBar5)" == "there is no bar 5: the song has 4 bars")
    }

    @Test("a mute or solo that leaves nothing to hear is refused in one line, not rendered as silence")
    func nothingAudible() throws {
        let twoParts = ArrangementAudioTests.song(ArrangementAudioTests.note(0, 60, 0, 1) + ArrangementAudioTests.note(1, 64, 2, 3),
                                                  bars: 2, trackNames: ["Piano", "Bass"], trackChannels: [[0], [1]])
        #expect(throws: SongArrangementError.nothingAudible("solo channel 16")) { try SongArrangement(solo: [.channel(16)]).arrange(twoParts) }
        #expect(throws: SongArrangementError.nothingAudible("mute track 'Piano' and solo track 'Piano'")) {
            try SongArrangement(mute: [.track("Piano")], solo: [.track("Piano")]).arrange(twoParts)
        }
        #expect(throws: SongArrangementError.nothingAudible("mute channel 1, channel 2")) {
            try SongArrangement(mute: [.channel(1), .channel(2)]).arrange(twoParts)
        }
        // What is left must sound in what plays: the bass plays in bar 2 only.
        #expect(throws: SongArrangementError.self) { try SongArrangement(to: .bars(MIDIBarPosition(bar: 2)), solo: [.track("Bass")]).arrange(twoParts) }
        #expect(throws: Never.self) { try SongArrangement(solo: [.track("Bass")]).arrange(twoParts) }
        #expect(throws: Never.self) { try SongArrangement(mute: [.channel(2)]).arrange(twoParts) }
        // Live too: a mute of the last part sounding is refused, and the song plays on as it was.
        let muted = try LiveControl.mute([.channel(1), .channel(2)]).applied(to: SongArrangement(), at: 0.5, in: twoParts)
        #expect(throws: SongArrangementError.self) { try muted.arrange(twoParts) }
        #expect("\(SongArrangementError.nothingAudible("solo channel 16"))" == "nothing would sound: with solo channel 16 no note is left to play")
    }

    @Test("an option that would change nothing is refused by name: --loop-count without --loop, --to beside --loop")
    func optionsWithNoEffect() {
        #expect(throws: ArrangementTextError(option: "loop-count", message: "has no loop to repeat: give --loop A-B with it")) {
            try ArrangementText(loopCount: 3).arrangement()
        }
        #expect(throws: ArrangementTextError.self) { try ArrangementText(to: "12", loop: "9-16").arrangement() }
        #expect(throws: Never.self) { try ArrangementText(loop: "9-16", loopCount: 3).arrangement() }
    }
}

/// Sizes in a refusal: any size a file, a device or a directory reports is said, never trapped on.
@Suite("Sizes as a refusal says them")
struct SizeWordsTests {
    @Test("the largest size a directory or device can report is said, not an overflow; an amount just over a limit shows its bytes")
    func largeAndNearAmounts() {
        #expect(Mebibytes.amount(Int.max).hasSuffix(" MiB"))
        #expect(Mebibytes.amount(Int(Int64.max)) == Mebibytes.amount(Int.max))
        #expect(Mebibytes.amount(100 << 20) == "100.0 MiB")
        #expect(Mebibytes.amount(1) == "0.1 MiB", "something is never 0.0")
        #expect(Mebibytes.amount(0) == "0.0 MiB")
        let limit = 100 << 20
        #expect(Mebibytes.amount(limit + 20, over: limit) == "100.0 MiB (104857620 bytes)")
        #expect(Mebibytes.amount(limit + (1 << 20), over: limit) == "101.0 MiB")
    }
}

/// A loop's passes on FluidSynth's block grid: each pass is laid a whole number of 64-frame blocks
/// after the last, so every pass sounds as the one before it to the sample (but for the faint
/// tail of what came before it), where the section's own length would shift each pass a little
/// on the grid.
@Suite("Loop seams on the block grid")
struct LoopSeamGridTests {
    static let rate = ArrangementAudioTests.rate

    /// One second of the recorder (a pitch that shows any shift), looped from the start.
    static let song = ArrangementAudioTests.song([ArrangementAudioTests.program(0, Fixtures.recorder)]
                                                 + ArrangementAudioTests.note(0, 81, 0.05, 0.55), bars: 1)

    func render(_ arranged: ArrangedSong) async throws -> [Float] {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("out.wav").path
        _ = try await OfflineRenderer.render(arranged, soundFont: try await Fixtures.soundFont(), to: path)
        return try WAVFile(path: path).monoFloat
    }

    @Test("render --loop 0s-1s --loop-count 4: the passes after the first are laid 44160 frames apart (1 s rounded up to whole blocks) and sound alike, sample for sample")
    func passesAreAlike() async throws {
        let loop = LoopSection(start: .seconds(0), end: .seconds(1))
        let arranged = try SongArrangement(loop: loop, loopPasses: 4).arranged(Self.song)
        #expect(arranged.seams.map(\.seconds) == [1, 2, 3])
        let mono = try await render(arranged)
        let pass = 44_160
        #expect(pass % SongScheduler.blockFrames == 0 && pass >= Self.rate)
        #expect(mono.count >= 4 * pass, "the render lasts \(mono.count) frames")
        func slice(_ index: Int, shift: Int = 0) -> ArraySlice<Float> {
            mono[(index * pass + shift)..<(index * pass + shift + Self.rate * 6 / 10)]
        }
        func difference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Double {
            let pairs = zip(a, b).map { Double($0 - $1) * Double($0 - $1) }
            return (pairs.reduce(0, +) / Double(pairs.count)).squareRoot()
        }
        let level = WAVAnalysis.rms(slice(1))
        #expect(level > 0.01, "the pass is silent: \(level)")
        // Passes 3 and 4 against pass 2: only dither and a long-decayed tail tell them apart.
        for index in 2...3 {
            let apart = difference(slice(index), slice(1))
            #expect(apart < level / 100, "pass \(index + 1) differs from pass 2 by \(apart) RMS, against a level of \(level)")
        }
        // The check can tell: the same pass 16 frames off differs by far more.
        #expect(difference(slice(2, shift: 16), slice(1)) > level / 10)
    }
}
