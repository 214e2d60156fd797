import MIDI
@testable import Playback
import TestSupport
import Testing

/// The composer's controls while a song plays, judged on the audio the song's source renders:
/// a live loop against the same loop laid out offline, and a seek mid-song against a song that
/// starts at its target.
@Suite("The composer's controls live, on the rendered audio")
struct LiveControlAudioTests {
    static let rate = 44_100
    /// The render loop's block, as a device would ask for it.
    static let block = 1_024

    /// `frames` frames of `source`, mono, in blocks; `replace` runs once, before the block that
    /// begins at frame `at`.
    static func render(_ source: PlaybackSource, frames: Int, block: Int = block, replaceAt at: Int? = nil,
                       replace: (() -> Void)? = nil) -> [Int16] {
        var mono: [Int16] = []
        var buffer = [Int16](repeating: 0, count: block * 2)
        while mono.count < frames {
            if mono.count == at { replace?() }
            let produced = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
            for frame in 0..<produced { mono.append(buffer[frame * 2]) }
            if produced < block { break }
        }
        return Array(mono.prefix(frames))
    }

    /// Eight bars of 4/4 at 120 BPM (2 s a bar): a recorder note at each bar's start, a different
    /// key each bar, the last one held past the bar line; the pedal down in bar 3.
    static func song() -> MIDISong {
        let keys: [UInt8] = [60, 62, 64, 65, 67, 69, 71, 72]
        var events = [ArrangementAudioTests.program(0, Fixtures.recorder)]
        for (bar, key) in keys.enumerated() {
            events += ArrangementAudioTests.note(0, key, Double(bar) * 2, Double(bar) * 2 + 2.5)
        }
        events.append(MIDITimedEvent(seconds: 4, message: .controlChange(channel: 0, controller: 64, value: 127)))
        events.append(MIDITimedEvent(seconds: 6, message: .controlChange(channel: 0, controller: 64, value: 0)))
        return ArrangementAudioTests.song(events, bars: 8)
    }

    @Test("a live loop plays sample for sample as the same loop laid out offline for as many passes, with the memory of one pass")
    func liveLoopMatchesOffline() async throws {
        let song = Self.song()
        let loop = LoopSection(start: .bars(MIDIBarPosition(bar: 3)), end: .bars(MIDIBarPosition(bar: 5)))
        let live = try SongArrangement(from: .bars(MIDIBarPosition(bar: 2)), loop: loop).arrangeLive(song)
        // The way in is bar 2 to the section's end (bars 2-4, 6 s), then the pass (bars 3-4, 4 s),
        // which begins with its chase (controllers reset first) right after the way in's releases.
        let start = try #require(live.loopStart)
        #expect(start.seconds == 6)
        #expect(live.song.events[start.eventIndex] == MIDITimedEvent(seconds: 6, message: .controlChange(channel: 0, controller: 121, value: 0)))
        #expect(live.song.events[..<start.eventIndex].allSatisfy { $0.seconds <= 6 })
        #expect(live.song.durationSeconds == 6 + 4, "the live song holds the way in and one pass")
        let offline = try SongArrangement(from: .bars(MIDIBarPosition(bar: 2)), loop: loop, loopPasses: 6).arranged(song)
        #expect(offline.song.durationSeconds == 6 + 5 * 4)
        #expect(offline.seams.map(\.seconds) == [6, 10, 14, 18, 22], "a seam where each pass after the way in begins")

        let frames = 20 * Self.rate
        let heardLive: [Int16]
        do {
            // A synthesiser of its own for each render: effects keep a little of what sounded.
            let source = try PlaybackSource(song: song, soundFont: try await Fixtures.soundFont())
            heardLive = Self.render(source, frames: frames, replaceAt: 0) { source.replaceSong(with: live) }
            // Still looping after five passes: the song has not ended, and it is inside the section.
            #expect(!source.hasEnded)
            let place = SongArrangement(from: .bars(MIDIBarPosition(bar: 2)), loop: loop).songSeconds(atArranged: source.positionSeconds, in: song)
            #expect(place >= 4 && place < 8, "after 20 s the loop is at \(place) s of the song")
        }
        let heardOffline: [Int16]
        do {
            let source = try PlaybackSource(arranged: offline, soundFont: try await Fixtures.soundFont())
            heardOffline = Self.render(source, frames: frames)
        }
        #expect(heardLive.count == frames && heardOffline.count == frames)
        let firstDifference = WAVAnalysis.firstDifference(heardLive, heardOffline)
        #expect(firstDifference == nil, "the live loop departs from the offline one at frame \(firstDifference ?? -1)")
    }

    @Test("a seek mid-song takes effect at the next block and lands on the target bar's first note, as a song started there sounds")
    func seekMidSong() async throws {
        let song = Self.song()
        let font = try await Fixtures.soundFont()
        // 1.5 s into bar 1 (a block boundary), seek to bar 6.
        let swap = 64 * Self.block
        let target = try SongArrangement(from: .bars(MIDIBarPosition(bar: 6))).arrangeLive(song)
        let source = try PlaybackSource(song: song, soundFont: font)
        let heard = Self.render(source, frames: swap + 4 * Self.rate, replaceAt: swap) { source.replaceSong(with: target) }
        #expect(source.positionSeconds > 3.9 && source.positionSeconds <= 4.05, "4 s into the new timeline")
        let reference = try PlaybackSource(song: target.song, soundFont: try await Fixtures.soundFont())
        let wanted = Self.render(reference, frames: 4 * Self.rate)

        // Until the swap, the song as it was: bar 1's C4.
        let before = heard[..<swap].map { Float($0) / Float(Int16.max) }
        #expect(ArrangementAudioTests.strongest([261.63, 392.0], in: ArraySlice(before.suffix(Self.rate / 2))) == 261.63)
        // From the swap, bar 6's A4 at once, then bar 7's B4 two seconds on; nothing of C4 left.
        let after = heard[swap...].map { Float($0) / Float(Int16.max) }
        // The A4 begins on the swap's frame; the recorder's attack is a ramp, which passes -66 dBFS
        // within 6 ms. (An onset detector looking for a fourfold rise sees none in a ramp from
        // silence: it used to find the old note's remains here, which the seek no longer leaves.)
        let firstSound = WAVAnalysis.firstSound(after, sampleRate: Self.rate, threshold: 0.0005)
        #expect(firstSound.map { $0 < 0.006 } == true, "first sound after the seek at \(firstSound ?? -1) s")
        #expect(ArrangementAudioTests.strongest([261.63, 440.0], in: ArraySlice(after[(Self.rate / 10)..<(Self.rate / 2)])) == 440.0)
        #expect(ArrangementAudioTests.strongest([440.0, 493.88], in: ArraySlice(after[(Self.rate * 26 / 10)..<(Self.rate * 30 / 10)])) == 493.88)
        // As the song started at bar 6 sounds, to the sample: the new timeline plays on a fresh
        // synthesiser (no reverb or chorus tail of what sounded before, FluidSynth's blocks and
        // dither from their start), as a render started there does.
        let settled = Self.rate / 20
        let difference = zip(heard[(swap + settled)...], wanted[settled...]).map { Float(Int($0.0) - Int($0.1)) / Float(Int16.max) }
        let music = wanted[settled...].map { Float($0) / Float(Int16.max) }
        let ratio = WAVAnalysis.rms(ArraySlice(difference)) / WAVAnalysis.rms(ArraySlice(music))
        let firstDifference = WAVAnalysis.firstDifference(heard[swap...], wanted)
        #expect(ratio < 0.05, """
            after the seek the song differs from one started at bar 6 by \(ratio) of its level (heard RMS \
            \(WAVAnalysis.rms(ArraySlice(after))), wanted \(WAVAnalysis.rms(ArraySlice(music))), first differing frame \
            \(firstDifference ?? -1) after the swap)
            """)
        #expect(firstDifference == nil, "the seek departs from the render started at bar 6 at frame \(firstDifference ?? -1) after the swap")
    }

    @Test("a seek taken up off FluidSynth's 64-frame grid, by a device pulling 441-frame periods, is still the render started at its target, to the sample")
    func seekOffTheBlockGrid() async throws {
        let song = Self.song()
        let font = try await Fixtures.soundFont()
        // 441-frame periods (10 ms): the swap at 150 periods, 1.5 s in, is 66,150 frames, which
        // is not a multiple of 64: the synthesiser the song started on is 38 frames into a block.
        let period = 441
        let swap = 150 * period
        #expect(swap % 64 != 0)
        let target = try SongArrangement(from: .bars(MIDIBarPosition(bar: 4, beat: 2))).arrangeLive(song)
        let source = try PlaybackSource(song: song, soundFont: font)
        let heard = Self.render(source, frames: swap + 3 * Self.rate, block: period, replaceAt: swap) { source.replaceSong(with: target) }
        let reference = try PlaybackSource(song: target.song, soundFont: try await Fixtures.soundFont())
        let wanted = Self.render(reference, frames: 3 * Self.rate)
        #expect(heard.count == swap + 3 * Self.rate && wanted.count == 3 * Self.rate)
        let firstDifference = WAVAnalysis.firstDifference(heard[swap...], wanted)
        #expect(firstDifference == nil, "the seek departs from the render started at bar 4 beat 2 at frame \(firstDifference ?? -1) after the swap")
        // Not silence matching silence: bar 5's G4 sounds 1.5 s after the target (bar 4's F4,
        // struck before it, is not struck again: a seek leaves notes that began earlier silent).
        let after = heard[swap...].map { Float($0) / Float(Int16.max) }
        #expect(WAVAnalysis.rms(ArraySlice(after)) > 0.01)
    }
}
