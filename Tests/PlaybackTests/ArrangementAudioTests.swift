import Foundation
import MIDI
@testable import Playback
import TestSupport
import Testing

/// The composer's controls judged on the rendered audio: where the song starts, a loop's seams,
/// tempo, key, muted parts and the count-in, as a listener would hear them.
@Suite("The composer's controls, on the rendered audio")
struct ArrangementAudioTests {
    static let rate = 44_100

    private func render(_ song: MIDISong) async throws -> WAVFile {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("out.wav").path
        _ = try await OfflineRenderer.render(song, soundFont: try await Fixtures.soundFont(), to: path)
        return try WAVFile(path: path)
    }

    /// A song in 4/4 at 120 BPM (a bar is 2 s), its bars known, with `events` (seconds, message).
    static func song(_ events: [MIDITimedEvent], bars count: Int, trackNames: [String?] = [], trackChannels: [Set<UInt8>] = []) -> MIDISong {
        let bars = MIDIBarMap(ticksPerQuarter: 480, tempo: MIDITempoMap(division: .ticksPerQuarterNote(480), changes: []),
                              meterChanges: [], endTick: 480 * 4 * count)
        return MIDISong(events: events.sorted { $0.seconds < $1.seconds }, durationSeconds: Double(count) * 2,
                        trackNames: trackNames, bars: bars, trackChannels: trackChannels)
    }

    static func note(_ channel: UInt8, _ key: UInt8, _ on: Double, _ off: Double, velocity: UInt8 = 100) -> [MIDITimedEvent] {
        [MIDITimedEvent(seconds: on, message: .noteOn(channel: channel, key: key, velocity: velocity)),
         MIDITimedEvent(seconds: off, message: .noteOff(channel: channel, key: key, velocity: 0))]
    }

    static func program(_ channel: UInt8, _ program: UInt8, at seconds: Double = 0) -> MIDITimedEvent {
        MIDITimedEvent(seconds: seconds, message: .programChange(channel: channel, program: program))
    }

    /// The frequency among `candidates` with the most energy in `samples`.
    static func strongest(_ candidates: [Double], in samples: ArraySlice<Float>) -> Double {
        candidates.max { WAVAnalysis.energy(at: $0, in: samples, sampleRate: rate) < WAVAnalysis.energy(at: $1, in: samples, sampleRate: rate) }!
    }

    @Test("--from 5 lands on bar 5's first note, sample for sample as a song that starts there")
    func seekLandsOnTheBar() async throws {
        // A piano note at the start of each of 8 bars, a different key each bar.
        let keys: [UInt8] = [60, 62, 64, 65, 67, 69, 71, 72]
        var events = [Self.program(0, Fixtures.piano)]
        for (bar, key) in keys.enumerated() { events += Self.note(0, key, Double(bar) * 2, Double(bar) * 2 + 1) }
        let song = Self.song(events, bars: 8)
        let arranged = try SongArrangement(from: .bars(MIDIBarPosition(bar: 5))).arrange(song)

        var expected = [Self.program(0, Fixtures.piano)]
        for (bar, key) in keys.dropFirst(4).enumerated() { expected += Self.note(0, key, Double(bar) * 2, Double(bar) * 2 + 1) }
        let reference = MIDISong(events: expected.sorted { $0.seconds < $1.seconds }, durationSeconds: 8)
        let heard = try await render(arranged), wanted = try await render(reference)
        #expect(heard.frameCount == wanted.frameCount)
        // The first differing frame, not the arrays: a failing `==` of two 8 s renders makes Swift
        // Testing diff them, which takes many minutes.
        let firstDifference = WAVAnalysis.firstDifference(heard.monoFloat, wanted.monoFloat)
        #expect(firstDifference == nil, "the seek does not match a render that starts at bar 5 from frame \(firstDifference ?? -1)")
        let onsets = WAVAnalysis.onsets(heard.monoFloat, sampleRate: Self.rate)
        #expect(onsets.first.map { $0 < 0.006 } == true, "first onset at \(onsets.first ?? -1) s")
        #expect(onsets.count == 4, "onsets: \(onsets)")
    }

    @Test("seeking into a held pad with the sustain pedal down sounds the pad's program and no stale note")
    func seekChasesTheState() async throws {
        // Bar 1: strings (program 48) on channel 1, pedal down, a chord held into bar 3; a piano
        // program is set on channel 2 and never changes. Bar 3 beat 1: a new note on each channel.
        var events = [Self.program(0, 48), Self.program(1, Fixtures.piano),
                      MIDITimedEvent(seconds: 0, message: .controlChange(channel: 0, controller: 64, value: 127)),
                      MIDITimedEvent(seconds: 0, message: .pitchBend(channel: 0, value: 8192 + 4096))]
        events += Self.note(0, 48, 0, 1) + Self.note(0, 55, 0, 5)
        events += Self.note(0, 69, 4, 5) + Self.note(1, 76, 4, 5)
        let song = Self.song(events, bars: 3)
        let arranged = try SongArrangement(from: .bars(MIDIBarPosition(bar: 2))).arrange(song)
        // The state at bar 2 comes first; the chord's notes, begun in bar 1, are not played.
        let state: [MIDIMessage] = [
            .programChange(channel: 0, program: 48), .controlChange(channel: 0, controller: 64, value: 127),
            .pitchBend(channel: 0, value: 12288), .programChange(channel: 1, program: Fixtures.piano),
            .noteOn(channel: 0, key: 69, velocity: 100),
        ]
        let first: [MIDIMessage] = arranged.events.prefix(5).map(\.message)
        #expect(first == state)
        #expect(!arranged.events.contains { if case .noteOff(0, 55, _) = $0.message { true } else { false } },
                "a note-off for a note that never started here")
        let wav = try await render(arranged)
        let mono = wav.monoFloat
        #expect(WAVAnalysis.peak(mono[0..<Int(1.9 * Double(Self.rate))]) <= 1.0 / 32768, "a stale note sounds before bar 3")
        // The same two notes played from silence with that state: the same sound.
        var reference = [Self.program(0, 48), MIDITimedEvent(seconds: 0, message: .controlChange(channel: 0, controller: 64, value: 127)),
                         MIDITimedEvent(seconds: 0, message: .pitchBend(channel: 0, value: 8192 + 4096)), Self.program(1, Fixtures.piano)]
        reference += Self.note(0, 69, 2, 3) + Self.note(1, 76, 2, 3)
        let wanted = try await render(MIDISong(events: reference.sorted { $0.seconds < $1.seconds }, durationSeconds: 4))
        let firstDifference = WAVAnalysis.firstDifference(mono, wanted.monoFloat)
        #expect(mono.count == wanted.monoFloat.count && firstDifference == nil, "differs from frame \(firstDifference ?? -1)")
    }

    @Test("a one-bar loop played 100 times has its seam on the exact frame every pass: no gap, no drift, nothing held over")
    func loopSeamIsExact() async throws {
        // 2/4 would be shorter; a bar of 4/4 at 120 BPM is 2 s: make it a half-bar section by seconds.
        var events = [Self.program(0, Fixtures.recorder)]
        events += Self.note(0, 69, 0, 0.5) + Self.note(0, 72, 0.5, 1.5)  // C5 still held at the loop's end (1.0 s)
        let song = Self.song(events, bars: 1)
        let loop = LoopSection(start: .seconds(0), end: .seconds(1))
        let arranged = try SongArrangement(loop: loop, loopPasses: 100).arrange(song)
        #expect(arranged.durationSeconds == 100)
        // Every pass starts its A4 on the exact second, and the C5 held at the seam is released there.
        let starts = arranged.events.filter { if case .noteOn(_, 69, _) = $0.message { true } else { false } }.map(\.seconds)
        #expect(starts == (0..<100).map(Double.init))
        let releases = arranged.events.filter { if case .noteOff(_, 72, _) = $0.message { true } else { false } }.map(\.seconds)
        #expect(releases == (1...100).map(Double.init))

        let wav = try await render(arranged)
        let mono = wav.monoFloat
        // No gap: across each seam (C5 released, A4 struck on the same frame) the sound dips no
        // lower than at the song's own change from A4 to C5 half way through a pass.
        let levels = WAVAnalysis.rmsPerWindow(Array(mono[0..<(100 * Self.rate)]), sampleRate: Self.rate, windowSeconds: 0.01)
        let inside = levels[30..<80].min()!
        #expect(inside > 0.001, "the song itself is silent at its note change: \(inside)")
        for seam in 1..<100 {
            let around = levels[(seam * 100 - 20)..<(seam * 100 + 30)].min()!
            #expect(around > inside / 2, "a gap at the seam at \(seam) s: \(around) against \(inside) inside a pass")
        }
        // No drift: the last pass sounds as the second does, A4 first, as loud.
        let second = mono[(Self.rate + Self.rate / 10)..<(Self.rate + Self.rate * 4 / 10)]
        let last = mono[(99 * Self.rate + Self.rate / 10)..<(99 * Self.rate + Self.rate * 4 / 10)]
        #expect(Self.strongest([440, 523.25], in: last) == 440)
        let ratio = WAVAnalysis.rms(last) / WAVAnalysis.rms(second)
        #expect(abs(ratio - 1) < 0.05, "the 100th pass is \(ratio) times as loud as the 2nd")
    }

    @Test("tempo 50% doubles the time between notes and keeps their pitch")
    func halfTempo() async throws {
        var events = [Self.program(0, Fixtures.piano)]
        // The same key each time, so the detector meets the same attack each time.
        events += Self.note(0, 60, 0.5, 0.9) + Self.note(0, 60, 1.0, 1.4) + Self.note(0, 60, 1.5, 1.9)
        let song = Self.song(events, bars: 1)
        let wav = try await render(try SongArrangement(tempo: .percent(50)).arrange(song))
        let onsets = WAVAnalysis.onsets(wav.monoFloat, sampleRate: Self.rate)
        #expect(onsets.count == 3, "onsets: \(onsets)")
        // The detector sees a note within 20 ms of its start; the intervals between notes are exact.
        for (onset, expected) in zip(onsets, [1.0, 2.0, 3.0]) { #expect(abs(onset - expected) < 0.02, "onset at \(onset) s") }
        for (later, earlier) in zip(onsets.dropFirst(), onsets) { #expect(abs(later - earlier - 1) < 0.006, "\(later - earlier) s apart") }

        let recorder = Self.song([Self.program(0, Fixtures.recorder)] + Self.note(0, 69, 0, 1), bars: 1)
        let slow = try await render(try SongArrangement(tempo: .beatsPerMinute(60)).arrange(recorder))
        #expect(Self.strongest([415.3, 440, 466.2], in: slow.monoFloat[Self.rate / 2..<Self.rate * 3 / 2]) == 440)
    }

    @Test("transpose +2 moves the melody up a tone and leaves the drums on channel 10 alone")
    func transposeUpATone() async throws {
        var events = [Self.program(0, Fixtures.recorder)]
        events += Self.note(0, 69, 0, 1.5) + Self.note(9, 38, 0.5, 0.6)
        let arranged = try SongArrangement(transpose: 2).arrange(Self.song(events, bars: 1))
        #expect(arranged.events.contains { $0.message == .noteOn(channel: 9, key: 38, velocity: 100) }, "the snare moved")
        #expect(arranged.events.contains { $0.message == .noteOn(channel: 0, key: 71, velocity: 100) })
        let wav = try await render(arranged)
        #expect(Self.strongest([440, 466.16, 493.88, 523.25], in: wav.monoFloat[Self.rate * 7 / 10..<Self.rate * 14 / 10]) == 493.88)
    }

    @Test("a part muted by channel or by track name is absent; solo keeps only it")
    func muteAndSolo() async throws {
        var events = [Self.program(0, Fixtures.recorder), Self.program(1, Fixtures.recorder)]
        events += Self.note(0, 69, 0, 1.5) + Self.note(1, 76, 0, 1.5)  // A4 on channel 1, E5 on channel 2
        let song = Self.song(events, bars: 1, trackNames: ["Melody", "Descant"], trackChannels: [[0], [1]])
        let middle = Self.rate / 4..<Self.rate
        for arrangement in [SongArrangement(mute: [.channel(2)]), SongArrangement(mute: [.track("descant")]),
                            SongArrangement(solo: [.track("Melody")])] {
            let mono = try await render(try arrangement.arrange(song)).monoFloat
            let a4 = WAVAnalysis.energy(at: 440, in: mono[middle], sampleRate: Self.rate)
            let e5 = WAVAnalysis.energy(at: 659.26, in: mono[middle], sampleRate: Self.rate)
            #expect(a4 > 1000 * e5, "\(arrangement.mute) \(arrangement.solo): A4 \(a4), E5 \(e5)")
        }
        #expect(throws: SongArrangementError.noSuchTrack("Drums", known: ["Melody", "Descant"])) {
            try SongArrangement(mute: [.track("Drums")]).arrange(song)
        }
    }

    @Test("a two-bar count-in in 3/4 at 120 BPM is six clicks half a second apart, the song right after")
    func countIn() async throws {
        let bars = MIDIBarMap(ticksPerQuarter: 480, tempo: MIDITempoMap(division: .ticksPerQuarterNote(480), changes: []),
                              meterChanges: [(0, MIDIMeter(numerator: 3, denominator: 4))], endTick: 480 * 3)
        let song = MIDISong(events: [Self.program(0, Fixtures.piano)] + Self.note(0, 60, 0, 1), durationSeconds: 1.5, bars: bars)
        let arranged = try SongArrangement(countInBars: 2).arrange(song)
        let clicks = arranged.events.filter { if case .noteOn(9, _, _) = $0.message { true } else { false } }
        #expect(clicks.map(\.seconds) == [0, 0.5, 1, 1.5, 2, 2.5])
        let keys: [UInt8] = clicks.map { if case let .noteOn(_, key, _) = $0.message { key } else { 0 } }
        #expect(keys == [76, 77, 77, 76, 77, 77])
        let onsets = WAVAnalysis.onsets(try await render(arranged).monoFloat, sampleRate: Self.rate)
        #expect(onsets.count == 7, "onsets: \(onsets)")
        for (onset, expected) in zip(onsets, [0, 0.5, 1, 1.5, 2, 2.5, 3]) { #expect(abs(onset - expected) < 0.02, "onset at \(onset) s") }
    }

    @Test("controls that do not fit the song are refused with one clear line")
    func badControls() throws {
        let song = Self.song(Self.note(0, 60, 0, 1), bars: 4)
        #expect(throws: SongArrangementError.position(.noSuchBar(9, bars: 4))) { try SongArrangement(from: .bars(MIDIBarPosition(bar: 9))).arrange(song) }
        #expect(throws: SongArrangementError.tempo(.percent(1000))) { try SongArrangement(tempo: .percent(1000)).arrange(song) }
        #expect(throws: SongArrangementError.noSuchChannel(17)) { try SongArrangement(mute: [.channel(17)]).arrange(song) }
        let backwards = try LoopSection(parsing: "3-2")
        #expect(throws: SongArrangementError.emptyLoop(backwards)) { try SongArrangement(loop: backwards).arrange(song) }
        #expect("\(SongArrangementError.noSuchChannel(17))" == "there is no channel 17: channels are 1 to 16")
    }
}
