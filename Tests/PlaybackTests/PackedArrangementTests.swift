import Foundation
@testable import MIDI
@testable import Playback
import TestSupport
import Testing

/// An arranged song (`play --from --loop --tempo --transpose --mute --count-in…`) is kept as a view
/// of the written song's packed events: these scenarios hold it to the events the arrangement laid
/// with a `Double` each before, to the bit, and to the bound of twice the file for the
/// written song and the arranged one together.
@Suite("Packed arrangements: an arranged song shares the written song's events")
struct PackedArrangementTests {
    /// The arrangement as it was laid before it was packed: every event with its seconds, the way
    /// in merged with the count-in, then the passes.
    static func unpackedArrangement(_ arrangement: SongArrangement, of song: MIDISong, loopingLive: Bool,
                                    limits: MIDIReadLimits = .default) throws -> ArrangedSong {
        let layout = try arrangement.layout(of: song)
        let (start, stop, section, factor) = (layout.start, layout.stop, layout.section, layout.factor)
        let silenced = try arrangement.silencedChannels(in: song)
        // A mute or solo that leaves nothing to hear is refused before anything is laid, both ways.
        if !silenced.isEmpty { try arrangement.requireSomethingAudible(in: song, layout, silenced: silenced) }
        let countIn = layout.countIn
        var written = countIn.seconds
        var segments = [(start, stop)]
        if let section, loopingLive {
            segments.append(section)
        } else if let section, arrangement.loopPasses > 1 {
            segments += Array(repeating: section, count: arrangement.loopPasses - 1)
        }
        var laid: [[MIDITimedEvent]] = []
        var count = countIn.events.count
        var passStart = 0.0
        for (index, segment) in segments.enumerated() {
            var output: [MIDITimedEvent] = []
            if index == 1 { passStart = written }
            for message in SongArrangement.chase(song, before: segment.0, resetFirst: index > 0) {
                output.append(MIDITimedEvent(seconds: written, message: message))
            }
            var held = HeldNotes()
            if index == 0, arrangement.restrikesHeldNotes {
                for note in SongArrangement.notesSounding(in: song, at: segment.0) {
                    guard let message = held.admit(note) else { continue }
                    output.append(MIDITimedEvent(seconds: written, message: message))
                }
            }
            for event in song.events where event.seconds >= segment.0 && event.seconds < segment.1 {
                guard let message = held.admit(event.message) else { continue }
                output.append(MIDITimedEvent(seconds: written + event.seconds - segment.0, message: message))
                guard count + output.count <= limits.maxEvents else { throw SongArrangementError.tooManyEvents(limit: limits.maxEvents) }
            }
            written += segment.1 - segment.0
            for message in held.releases() { output.append(MIDITimedEvent(seconds: written, message: message)) }
            count += output.count
            laid.append(output.compactMap { event -> MIDITimedEvent? in
                guard let message = arrangement.shaped(event.message, silenced: silenced) else { return nil }
                return MIDITimedEvent(seconds: event.seconds / factor, message: message)
            })
        }
        let clicks = countIn.events.map { MIDITimedEvent(seconds: $0.seconds / factor, message: $0.message) }
        let duration = written / factor
        guard duration <= limits.maxDurationSeconds else {
            throw SongArrangementError.tooLong(seconds: duration, limit: limits.maxDurationSeconds)
        }
        let wayIn = MIDITimelineMerge.merge([clicks, laid[0]])
        let events = laid.count > 1 ? wayIn + laid.dropFirst().joined() : wayIn
        let song = MIDISong(events: events, durationSeconds: duration, title: song.title, trackNames: song.trackNames,
                            warnings: song.warnings, bars: nil, trackChannels: song.trackChannels)
        let loopStart = loopingLive && section != nil
            ? ArrangedSong.LoopStart(eventIndex: wayIn.count, seconds: passStart / factor) : nil
        return ArrangedSong(song: song, loopStart: loopStart)
    }

    /// The controls a composer combines, placed by the song's length: tempo, counted and live
    /// loops, count-ins, transpositions (one pushing keys off the keyboard), mute and solo, and
    /// the restrike of a song going on after its output died.
    static func arrangements(for duration: Double) -> [(name: String, arrangement: SongArrangement)] {
        func at(_ fraction: Double) -> MIDISongPosition { .seconds(duration * fraction) }
        func loop(_ from: Double, _ to: Double) -> LoopSection { LoopSection(start: at(from), end: at(to)) }
        var restrike = SongArrangement(from: at(0.37), tempo: .percent(110))
        restrike.restrikesHeldNotes = true
        return [
            ("--tempo 90% --loop ¼-½ --loop-count 3 --count-in 2 --transpose 3",
             SongArrangement(loop: loop(0.25, 0.5), loopPasses: 3, tempo: .percent(90), transpose: 3, countInBars: 2)),
            ("--from 10% --to 80% --tempo 133% --transpose -5 --mute 10",
             SongArrangement(from: at(0.1), to: at(0.8), tempo: .percent(133), transpose: -5, mute: [.channel(10)])),
            ("--from 10% --loop 30%-60% --loop-count 2 --count-in 1 --tempo 75% --mute 1",
             SongArrangement(from: at(0.1), loop: loop(0.3, 0.6), loopPasses: 2, tempo: .percent(75), mute: [.channel(1)], countInBars: 1)),
            ("--transpose 48 --solo 1,2", SongArrangement(transpose: 48, solo: [.channel(1), .channel(2)])),
            ("--tempo 96bpm --count-in 4", SongArrangement(tempo: .beatsPerMinute(96), countInBars: 4)),
            ("--loop 20%-40% (live, until loop off) --tempo 120%",
             SongArrangement(loop: loop(0.2, 0.4), loopPasses: 0, tempo: .percent(120))),
            ("a seek to 37% that strikes the held notes again, --tempo 110%", restrike),
        ]
    }

    static func arrange(_ arrangement: SongArrangement, _ song: MIDISong) throws -> ArrangedSong {
        arrangement.loopsUntilTurnedOff ? try arrangement.arrangeLive(song) : ArrangedSong(song: try arrangement.arrange(song))
    }

    /// The first difference between two arranged songs, to the bit, or nil.
    static func difference(_ got: ArrangedSong, _ want: ArrangedSong) -> String? {
        guard got.song.events.count == want.song.events.count else {
            return "\(got.song.events.count) events where \(want.song.events.count) were laid"
        }
        for index in got.song.events.indices {
            let (seconds, expected) = (got.song.events.seconds(at: index), want.song.events.seconds(at: index))
            guard seconds.bitPattern == expected.bitPattern, got.song.events.message(at: index) == want.song.events.message(at: index) else {
                return "event \(index): \(got.song.events[index]) where \(want.song.events[index]) was laid"
            }
        }
        guard got.song.durationSeconds.bitPattern == want.song.durationSeconds.bitPattern else {
            return "lasts \(got.song.durationSeconds) s where \(want.song.durationSeconds) s was laid"
        }
        guard got.loopStart == want.loopStart else { return "loop starts at \(String(describing: got.loopStart))" }
        return nil
    }

    static func isView(_ list: MIDIEventList) -> Bool {
        if case .arranged = list.clock { true } else { false }
    }

    static func hasTicks(_ list: MIDIEventList) -> Bool {
        if case .ticks = list.clock { true } else { false }
    }

    static let corpus = CorpusRenderTests.corpus

    @Test("every corpus song, arranged seven ways, is a view of its events holding what was laid before, to the bit")
    func corpusArrangementsUnchanged() throws {
        var compared = 0
        for name in try CorpusRenderTests.files() where name.hasSuffix(".mid") {
            guard let song = try? MIDIFileReader.read(contentsOfFile: Self.corpus.appendingPathComponent(name).path),
                  song.durationSeconds > 0 else { continue }
            // The written song on the seconds clock: the form an arrangement falls back to.
            let timed = MIDISong(events: Array(song.events), durationSeconds: song.durationSeconds, title: song.title,
                                 trackNames: song.trackNames, warnings: song.warnings, bars: song.bars, trackChannels: song.trackChannels)
            for (label, arrangement) in Self.arrangements(for: song.durationSeconds) {
                let before = Result { try Self.unpackedArrangement(arrangement, of: song, loopingLive: arrangement.loopsUntilTurnedOff) }
                let packed = Result { try Self.arrange(arrangement, song) }
                let fallback = Result { try Self.arrange(arrangement, timed) }
                switch (packed, fallback, before) {
                case let (.success(packed), .success(fallback), .success(before)):
                    // A format 2 file's tracks keep tempo maps of their own: it has no one tick clock to share.
                    #expect(Self.isView(packed.song.events) == Self.hasTicks(song.events), "\(name), \(label): packed \(Self.isView(packed.song.events))")
                    #expect(!Self.isView(fallback.song.events), "\(name), \(label): a seconds-clock song cannot be viewed")
                    if let difference = Self.difference(packed, before) { Issue.record("\(name), \(label), packed: \(difference)") }
                    if let difference = Self.difference(fallback, before) { Issue.record("\(name), \(label), seconds clock: \(difference)") }
                    #expect(packed.song.events == before.song.events)
                    compared += 1
                case let (.failure(packed), .failure(fallback), .failure(before)):
                    #expect("\(packed)" == "\(before)" && "\(fallback)" == "\(before)", "\(name), \(label)")
                default:
                    Issue.record("\(name), \(label): packed \(packed), seconds clock \(fallback), laid before \(before)")
                }
            }
        }
        #expect(compared >= 300, "only \(compared) arrangements compared")
    }

    static func denseFile(notes count: Int) -> [UInt8] { ClientSongs.denseNotes(count) }

    @Test("a dense song queued with --tempo 90%, a loop played 3 times, a count-in and a transposition takes at most twice its file, written and arranged together")
    func arrangedDenseSongWithinTwiceItsFile() throws {
        let bytes = Self.denseFile(notes: 200_000)
        let written = try MIDIFileReader.read(bytes)
        let duration = written.durationSeconds
        let arrangement = SongArrangement(loop: LoopSection(start: .seconds(duration / 4), end: .seconds(duration * 3 / 4)),
                                          loopPasses: 3, tempo: .percent(90), transpose: 2, countInBars: 2)
        let arranged = try arrangement.arrange(written)
        // The way in (three quarters of the song) and two more passes of its middle half.
        #expect(arranged.events.count > written.events.count)
        let held = written.memoryFootprint + arranged.memoryFootprint(besides: written)
        #expect(held <= 2 * bytes.count, "\(held) bytes for a file of \(bytes.count)")
        #expect(arranged.memoryFootprint(besides: written) < 4096, "the view adds \(arranged.memoryFootprint(besides: written)) bytes")

        // Before: the arranged events with a Double each beside the written song, over 6 times the file.
        let before = try Self.unpackedArrangement(arrangement, of: written, loopingLive: false).song
        #expect(written.memoryFootprint + before.memoryFootprint >= 6 * bytes.count)
        #expect(Self.difference(ArrangedSong(song: arranged), ArrangedSong(song: before)) == nil)
    }

    @Test("a muted part costs the arranged song a bit an event, not a copy")
    func mutedPartCostsABitAnEvent() throws {
        // Every note but the last is on channel 1: soloing channel 2 silences all their note-ons
        // (one note on channel 2 is left to hear, or the solo would be refused).
        var bytes = Self.denseFile(notes: 200_000)
        bytes.insert(contentsOf: [0x00, 0x91, 0x3C, 0x64, 0x01, 0x81, 0x3C, 0x00], at: bytes.count - 4)
        bytes.replaceSubrange(18..<22, with: SMFBytes.bigEndian32(bytes.count - 22))
        let written = try MIDIFileReader.read(bytes)
        let arranged = try SongArrangement(tempo: .percent(90), transpose: 30, solo: [.channel(2)]).arrange(written)
        #expect(arranged.events.count == written.events.count - 100_000)
        #expect(written.memoryFootprint + arranged.memoryFootprint(besides: written) <= 2 * bytes.count)
        #expect(arranged.memoryFootprint(besides: written) <= written.events.count / 8 + written.events.count / 16 + 4096)
        let before = try Self.unpackedArrangement(SongArrangement(tempo: .percent(90), transpose: 30, solo: [.channel(2)]),
                                                  of: written, loopingLive: false).song
        #expect(Self.difference(ArrangedSong(song: arranged), ArrangedSong(song: before)) == nil)
    }

    @Test("whatever an arrangement skips, the n-th event it plays is found, and the stretches it plays are told apart")
    func tableOfEventsPlayed() {
        var random = SplitMix64(seed: 25)
        for round in 0..<200 {
            let count = Int.random(in: 1...700, using: &random)
            // Sparse, dense, and everything between: a muted part, a dropped note-off, nothing.
            let keepOneIn = [1, 2, 3, 10, 64, 1000][round % 6]
            let played = (0..<count).filter { $0 == 0 || Int.random(in: 0..<keepOneIn, using: &random) != 0 }
            var bits = [UInt64](repeating: 0, count: (count + 63) / 64)
            for index in played { bits[index / 64] |= 1 << UInt64(index % 64) }
            let table = KeptEvents(bits: bits, count: count)
            for (rank, index) in played.enumerated() where table.index(ofRank: rank) != index {
                Issue.record("round \(round): event \(rank) played is \(index), the table says \(table.index(ofRank: rank))")
                break
            }
            var stretches: [Range<Int>] = []
            for index in played {
                if let last = stretches.last, last.upperBound == index {
                    stretches[stretches.count - 1] = last.lowerBound..<index + 1
                } else {
                    stretches.append(index..<index + 1)
                }
            }
            #expect(KeptEvents.stretches(of: bits, count: count, limit: count) == stretches, "round \(round)")
            #expect(KeptEvents.stretches(of: bits, count: count, limit: 0).count == min(1, stretches.count), "round \(round)")
        }
    }

    @Test("a song built from seconds is arranged with a Double an event, the same events as before")
    func songWithoutTicksFallsBack() throws {
        // Events at times no tick gives, out of step with one another.
        var events: [MIDITimedEvent] = []
        for index in 0..<40 {
            let seconds = Double(index) * 0.1 + 1e-9 * Double(index % 7)
            let struck = index - index % 2
            let (channel, key) = (UInt8(struck % 3), UInt8(60 + struck % 5))
            let message: MIDIMessage = index % 2 == 0 ? .noteOn(channel: channel, key: key, velocity: 90)
                : .noteOff(channel: channel, key: key, velocity: 0)
            events.append(MIDITimedEvent(seconds: seconds, message: message))
        }
        events.append(MIDITimedEvent(seconds: 1.05, message: .systemExclusive([0x7E, 0x7F, 0x09, 0x01])))
        let song = MIDISong(events: events.sorted { $0.seconds < $1.seconds }, durationSeconds: 4.5)
        let arrangement = SongArrangement(from: .seconds(0.35), loop: LoopSection(start: .seconds(1.0), end: .seconds(2.25)),
                                          loopPasses: 4, tempo: .percent(70), transpose: -2, mute: [.channel(2)], countInBars: 1)
        let arranged = try arrangement.arrange(song)
        #expect(!Self.isView(arranged.events))
        let before = try Self.unpackedArrangement(arrangement, of: song, loopingLive: false)
        #expect(Self.difference(ArrangedSong(song: arranged), before) == nil)
    }

    @Test("an arrangement of an arranged song is laid with its seconds, as before")
    func arrangementOfAViewFallsBack() throws {
        let written = try MIDIFileReader.read(Self.denseFile(notes: 2_000))
        let once = try SongArrangement(tempo: .percent(80), transpose: 1).arrange(written)
        #expect(Self.isView(once.events))
        let arrangement = SongArrangement(from: .seconds(0.5), loop: LoopSection(start: .seconds(1), end: .seconds(2)),
                                          loopPasses: 2, countInBars: 1)
        let twice = try arrangement.arrange(once)
        #expect(!Self.isView(twice.events))
        #expect(Self.difference(ArrangedSong(song: twice), try Self.unpackedArrangement(arrangement, of: once, loopingLive: false)) == nil)
    }

    @Test("a live loop's pass starts at the same event and second in the view as it did before")
    func liveLoopStartsWhereItDid() throws {
        let written = try MIDIFileReader.read(Self.denseFile(notes: 4_000))
        let arrangement = SongArrangement(from: .seconds(0.3), loop: LoopSection(start: .seconds(1.1), end: .seconds(2.7)),
                                          loopPasses: 0, tempo: .percent(85), countInBars: 3)
        let live = try arrangement.arrangeLive(written)
        #expect(Self.isView(live.song.events))
        let before = try Self.unpackedArrangement(arrangement, of: written, loopingLive: true)
        #expect(live.loopStart != nil)
        #expect(Self.difference(live, before) == nil)
    }
}
