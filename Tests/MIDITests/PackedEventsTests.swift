import MIDI
import Testing

/// A parsed song keeps its events packed (6 bytes each, ticks under the tempo map): these
/// scenarios hold it to what the unpacked timeline was, to the bit, and to its memory bound.
@Suite("Packed events: the same song in a quarter of the memory")
struct PackedEventsTests {
    /// The timeline as the reader built it before packing: every playable event with its
    /// seconds from the tempo map, tracks merged by time (ties: track order, then file order).
    static func unpackedTimeline(of file: MIDIFile) -> [MIDITimedEvent] {
        var timelines: [[MIDITimedEvent]] = []
        var trackStart = 0.0
        let shared = file.format == .sequentialTracks ? nil : MIDITempoMap(file: file, tracks: file.tracks.indices)
        for (index, track) in file.tracks.enumerated() {
            let map = shared ?? MIDITempoMap(file: file, tracks: [index])
            timelines.append(track.events.compactMap { event -> MIDITimedEvent? in
                let message: MIDIMessage
                switch event.kind {
                case .channel(let channel): message = channel
                case .systemExclusive(let bytes): message = .systemExclusive(bytes)
                case .escape(let bytes) where bytes.count >= 2 && bytes.first == 0xF0 && bytes.last == 0xF7:
                    message = .systemExclusive(Array(bytes.dropFirst().dropLast()))
                default: return nil
                }
                return MIDITimedEvent(seconds: trackStart + map.seconds(atTick: event.tick), message: message)
            })
            if shared == nil { trackStart += map.seconds(atTick: track.endTick) }
        }
        return MIDITimelineMerge.merge(timelines)
    }

    @Test("every corpus file reads to the same events at the same seconds, bit for bit")
    func corpusUnchanged() throws {
        var compared = 0
        for name in Corpus.fileNames() where name.hasSuffix(".mid") {
            guard let bytes = Corpus.bytes(of: name), let file = try? MIDIFileReader.parse(bytes) else { continue }
            let song = try MIDISong(file)
            let expected = Self.unpackedTimeline(of: file)
            #expect(song.events.count == expected.count, "\(name)")
            for (got, want) in zip(song.events, expected) where got.seconds.bitPattern != want.seconds.bitPattern || got.message != want.message {
                Issue.record("\(name): \(got) where the unpacked timeline has \(want)")
                break
            }
            compared += 1
        }
        #expect(compared >= 20, "only \(compared) corpus files compared")
    }

    @Test("a song read straight from its bytes is the song made of its parsed file, for every corpus file")
    func readingStraightMatchesParsing() throws {
        var compared = 0
        for name in Corpus.fileNames() where name.hasSuffix(".mid") {
            guard let bytes = Corpus.bytes(of: name) else { continue }
            let straight = Result { try MIDIFileReader.read(bytes) }
            let parsed = Result { try MIDISong(MIDIFileReader.parse(bytes)) }
            switch (straight, parsed) {
            case let (.success(a), .success(b)):
                #expect(a == b, "\(name)")
                #expect(zip(a.events, b.events).allSatisfy { $0.seconds.bitPattern == $1.seconds.bitPattern }, "\(name)")
            case let (.failure(a), .failure(b)):
                #expect("\(a)" == "\(b)", "\(name)")
            default:
                Issue.record("\(name): read gave \(straight), parse gave \(parsed)")
            }
            compared += 1
        }
        #expect(compared >= 20, "only \(compared) corpus files compared")
    }

    @Test("a song whose ticks do not fit the packing is read with a Double a time, the same song")
    func tickPastPackingFallsBack() throws {
        // A note at tick 0x0FFFFFFF (268 million, past the 27 bits a packed tick has), at
        // 24 ticks a frame of 30 fps SMPTE: about 4.3 days, under a limit raised for the test.
        let body: [UInt8] = [0x00, 0x90, 0x3C, 0x40, 0xFF, 0xFF, 0xFF, 0x7F, 0x80, 0x3C, 0x00] + SMF.endOfTrack
        let bytes = SMF.file(division: 0xE218, tracks: [body])  // -30 fps (0xE2), 24 ticks a frame
        let limits = MIDIReadLimits(maxDurationSeconds: 1e6)
        let song = try MIDIFileReader.read(bytes, limits: limits)
        #expect(song == (try MIDISong(MIDIFileReader.parse(bytes, limits: limits), limits: limits)))
        #expect(song.events.map(\.seconds) == [0, Double(0x0FFF_FFFF) / (30 * 24)])
    }

    @Test("tracks merge by time, and events at one tick keep track order")
    func mergeOrder() throws {
        // Track 1 plays key 61 at tick 0 and key 62 at tick 96; track 2 plays key 71 at tick 48
        // and key 70 at tick 96, where track 1's key 62 comes first.
        let first: [UInt8] = [0x00, 0x90, 0x3D, 0x40, 0x60, 0x90, 0x3E, 0x40] + SMF.endOfTrack
        let second: [UInt8] = [0x30, 0x90, 0x47, 0x40, 0x30, 0x90, 0x46, 0x40] + SMF.endOfTrack
        let file = try MIDIFileReader.parse(SMF.file(format: 1, tracks: [first, second]))
        let song = try MIDISong(file)
        #expect(Array(song.events) == Self.unpackedTimeline(of: file))
        #expect(song.events.map(\.message) == [61, 71, 62, 70].map { .noteOn(channel: 0, key: $0, velocity: 64) })
        #expect(song.events.map(\.seconds) == [0, 0.25, 0.5, 0.5])
    }

    @Test("every kind of message comes back as given, odd values too, under either clock")
    func everyMessageRoundTrips() throws {
        let messages: [MIDIMessage] = [
            .noteOff(channel: 15, key: 127, velocity: 0), .noteOn(channel: 200, key: 255, velocity: 1),
            .polyPressure(channel: 3, key: 60, pressure: 99), .controlChange(channel: 9, controller: 64, value: 127),
            .programChange(channel: 1, program: 127), .channelPressure(channel: 2, pressure: 5),
            .pitchBend(channel: 4, value: 16383), .pitchBend(channel: 4, value: 65535), .systemExclusive([0x7E, 0x7F, 0x09, 0x01]),
            .systemExclusive([]),
        ]
        let given = messages.enumerated().map { MIDITimedEvent(seconds: Double($0.offset) * 0.1 + 1e-9, message: $0.element) }
        #expect(Array(MIDIEventList(given)) == given)
        #expect(MIDIEventList(given) == MIDIEventList(given))

        // The same messages read from a file (channels 0...15 and 14-bit bends only there).
        let body: [UInt8] = [0x00, 0x9F, 0x3C, 0x64, 0x10, 0xE4, 0x7F, 0x7F, 0x10, 0xF0, 0x03, 0x7E, 0x09, 0xF7,
                             0x10, 0xC1, 0x7F, 0x10, 0xA3, 0x3C, 0x63, 0x10, 0xD2, 0x05, 0x10, 0xB9, 0x40, 0x7F,
                             0x10, 0x8F, 0x3C, 0x00] + SMF.endOfTrack
        let file = try MIDIFileReader.parse(SMF.file(tracks: [body]))
        let song = try MIDISong(file)
        #expect(Array(song.events) == Self.unpackedTimeline(of: file))
        #expect(song.events == MIDIEventList(Self.unpackedTimeline(of: file)), "lists of either clock compare by their events")
    }

    @Test("a dense song of 4-byte notes takes at most twice its file in memory")
    func memoryBound() throws {
        // 200,000 note events of 4 bytes each (delta, status, key, velocity), as the reliability
        // suite's queue flood writes them, over a 3-tempo map.
        var body = SMF.tempo(500_000)
        body.reserveCapacity(800_100)
        for index in 0..<200_000 {
            let on = index % 2 == 0
            body += [0x01, on ? 0x90 : 0x80, UInt8(48 + index % 24), on ? 0x64 : 0x00]
            if index == 100_000 { body += SMF.tempo(400_000) }
        }
        body += SMF.endOfTrack
        let bytes = SMF.file(division: 480, tracks: [body])
        let song = try MIDIFileReader.read(bytes)
        #expect(song.events.count == 200_000)
        #expect(song.memoryFootprint <= 2 * bytes.count, "\(song.memoryFootprint) bytes for a file of \(bytes.count)")
        // The same events with a Double each, as the reader kept them before: twice as large.
        let unpacked = MIDISong(events: Array(song.events), durationSeconds: song.durationSeconds)
        #expect(unpacked.memoryFootprint >= 2 * bytes.count)
        #expect(unpacked.events == song.events)
    }
}
