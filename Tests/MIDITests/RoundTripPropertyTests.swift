import MIDI
import TestSupport
import Testing

/// The song a `RandomSong` must read as, computed independently of the reader: integer
/// microsecond sums per tempo segment, a plain sort for merging.
extension RandomSong {
    var expectedSong: (messages: [MIDIMessage], times: [Double], duration: Double) {
        // Absolute ticks per event, and each track's end tick.
        let ticked = tracks.map { track in
            var tick = 0
            let events = track.events.map { item -> (tick: Int, event: Event) in
                tick += item.delta
                return (tick, item.event)
            }
            return (events: events, end: tick + track.endDelta)
        }
        func tempoChanges(_ indices: [Int]) -> [(tick: Int, tempo: Int)] {
            var changes: [(tick: Int, order: Int, tempo: Int)] = []
            for index in indices {
                for item in ticked[index].events {
                    if case .tempo(let tempo) = item.event { changes.append((item.tick, changes.count, tempo)) }
                }
            }
            return changes.sorted { ($0.tick, $0.order) < ($1.tick, $1.order) }.map { ($0.tick, $0.tempo) }
        }
        func seconds(_ tick: Int, _ changes: [(tick: Int, tempo: Int)]) -> Double {
            var numerator = 0  // microseconds × ppq
            var segmentStart = 0
            var tempo = 500_000
            for change in changes where change.tick <= tick {
                numerator += (change.tick - segmentStart) * tempo
                segmentStart = change.tick
                tempo = change.tempo
            }
            numerator += (tick - segmentStart) * tempo
            return Double(numerator) / (Double(ppq) * 1_000_000)
        }
        var timed: [(seconds: Double, track: Int, index: Int, message: MIDIMessage)] = []
        var duration = 0.0
        var start = 0.0
        for (trackIndex, track) in ticked.enumerated() {
            let changes = tempoChanges(format == 2 ? [trackIndex] : Array(ticked.indices))
            for (index, item) in track.events.enumerated() {
                let message: MIDIMessage? = switch item.event {
                case .channel(let message): message
                case .sysex(let body): .systemExclusive(body)
                case .tempo, .text: nil
                }
                if let message { timed.append((start + seconds(item.tick, changes), trackIndex, index, message)) }
            }
            let end = start + seconds(track.end, changes)
            duration = max(duration, end)
            if format == 2 { start = end }
        }
        timed.sort { ($0.seconds, $0.track, $0.index) < ($1.seconds, $1.track, $1.index) }
        return (timed.map(\.message), timed.map(\.seconds), duration)
    }
}

@Suite("Round trip of random songs")
struct RoundTripPropertyTests {
    @Test("random songs of every format, encoded with random writer choices, read back exactly", arguments: 0..<4)
    func randomSongsRoundTrip(shard: Int) throws {
        var rng = SplitMix64(seed: 0xC0FFEE + UInt64(shard))
        for caseNumber in 0..<500 {
            let description = RandomSong.make(using: &rng)
            let bytes = description.encode(using: &rng)
            let expected = description.expectedSong
            let song = try MIDIFileReader.read(bytes, limits: MIDIReadLimits(maxDurationSeconds: .infinity))
            let context: Comment = "shard \(shard) case \(caseNumber), format \(description.format), ppq \(description.ppq)"
            try #require(song.messages == expected.messages, context)
            #expect(zip(song.times, expected.times).allSatisfy { abs($0 - $1) <= 1e-9 * max(1, $1) }, context)
            #expect(abs(song.durationSeconds - expected.duration) <= 1e-9 * max(1, expected.duration), context)
        }
    }
}
