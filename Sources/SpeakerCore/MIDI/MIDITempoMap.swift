/// Converts ticks to seconds for one timeline: the tempo changes of a PPQ file, or the fixed
/// tick length of an SMPTE file.
///
/// Seconds at a tick are the exact sum over tempo segments of ticks × µs-per-quarter / PPQ,
/// each segment computed from integers so equal ticks always give identical seconds: that is
/// what keeps events of different tracks at the same tick in file order after merging.
public struct MIDITempoMap: Sendable, Equatable {
    /// A stretch of constant tempo starting at `tick`, which falls at `seconds`.
    struct Segment: Sendable, Equatable {
        var tick: Int
        var seconds: Double
        var microsecondsPerQuarter: Int
    }

    /// The SMF default when no tempo event precedes a tick: 120 beats per minute.
    public static let defaultMicrosecondsPerQuarter = 500_000

    private let division: MIDITimeDivision
    private let segments: [Segment]

    /// A map for `division` with `changes` as (tick, µs per quarter note), in any order; ties keep
    /// their order, so the last change at a tick wins. SMPTE divisions ignore tempo changes.
    public init(division: MIDITimeDivision, changes: [(tick: Int, microsecondsPerQuarter: Int)]) {
        self.division = division
        guard case .ticksPerQuarterNote(let ppq) = division else {
            segments = []
            return
        }
        let ordered = changes.enumerated().sorted {
            ($0.element.tick, $0.offset) < ($1.element.tick, $1.offset)
        }.map(\.element)
        var segments = [Segment(tick: 0, seconds: 0, microsecondsPerQuarter: Self.defaultMicrosecondsPerQuarter)]
        for change in ordered {
            let last = segments[segments.count - 1]
            let start = Self.seconds(from: last, to: change.tick, ppq: Int(ppq))
            if change.tick == last.tick {
                segments[segments.count - 1].microsecondsPerQuarter = change.microsecondsPerQuarter
            } else {
                segments.append(Segment(tick: change.tick, seconds: start, microsecondsPerQuarter: change.microsecondsPerQuarter))
            }
        }
        self.segments = segments
    }

    /// The tempo map of the given tracks of `file` (all tempo meta events in them).
    public init(file: MIDIFile, tracks: some Sequence<Int>) {
        var changes: [(tick: Int, microsecondsPerQuarter: Int)] = []
        for index in tracks {
            for event in file.tracks[index].events {
                guard let tempo = Self.microsecondsPerQuarter(of: event.kind) else { continue }
                changes.append((event.tick, tempo))
            }
        }
        self.init(division: file.division, changes: changes)
    }

    /// The tempo a Set Tempo meta event sets, if the event is one (3 data bytes).
    static func microsecondsPerQuarter(of kind: MIDITrackEvent.Kind) -> Int? {
        guard case .meta(MIDIMetaType.tempo, let data) = kind, data.count == 3 else { return nil }
        return Int(data[0]) << 16 | Int(data[1]) << 8 | Int(data[2])
    }

    /// Seconds from the start of the timeline to `tick`.
    public func seconds(atTick tick: Int) -> Double {
        switch division {
        case .smpte(let rate, let ticksPerFrame):
            if rate == .fps29_97DropFrame {
                return Double(tick) * 1001 / (30000 * Double(ticksPerFrame))
            }
            return Double(tick) / (Double(rate.rawValue) * Double(ticksPerFrame))
        case .ticksPerQuarterNote(let ppq):
            return Self.seconds(from: segment(containing: tick), to: tick, ppq: Int(ppq))
        }
    }

    /// The tick at `seconds` from the start of the timeline (the last tick not after it).
    public func tick(atSeconds seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        switch division {
        case .smpte(let rate, let ticksPerFrame):
            return Int((seconds * rate.framesPerSecond * Double(ticksPerFrame)).rounded(.down))
        case .ticksPerQuarterNote(let ppq):
            var low = 0
            var high = segments.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if segments[mid].seconds <= seconds { low = mid } else { high = mid - 1 }
            }
            let segment = segments[low]
            let ticks = (seconds - segment.seconds) * Double(ppq) * 1_000_000 / Double(segment.microsecondsPerQuarter)
            // A hair under a whole tick is that tick: seconds computed from a tick come back to it.
            return segment.tick + Int((ticks + 1e-6).rounded(.down))
        }
    }

    /// The tempo in force at `tick`, in microseconds per quarter note (the default for SMPTE).
    public func microsecondsPerQuarter(atTick tick: Int) -> Int {
        guard case .ticksPerQuarterNote = division else { return Self.defaultMicrosecondsPerQuarter }
        return segment(containing: tick).microsecondsPerQuarter
    }

    /// The bytes the map holds on the heap (its segments), give or take malloc's rounding.
    var memoryFootprint: Int { 32 + segments.capacity * MemoryLayout<Segment>.stride }

    /// The last segment starting at or before `tick` (binary search).
    private func segment(containing tick: Int) -> Segment {
        var low = 0
        var high = segments.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if segments[mid].tick <= tick { low = mid } else { high = mid - 1 }
        }
        return segments[low]
    }

    private static func seconds(from segment: Segment, to tick: Int, ppq: Int) -> Double {
        let ticks = Double(tick - segment.tick)
        return segment.seconds + ticks * Double(segment.microsecondsPerQuarter) / (Double(ppq) * 1_000_000)
    }
}
