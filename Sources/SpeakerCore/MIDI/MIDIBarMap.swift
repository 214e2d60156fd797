/// Bars and beats of a song: where bar 17 beat 3 falls in ticks and seconds, and which bar and
/// beat a moment of the song is in.
///
/// A composer thinks in bars, so positions given to `play --from`, `seek` and `loop` are bars.
/// They come from the file's own time-signature meta events (0x58; 4/4 where none is given) over
/// its tempo map. A time signature that changes in the middle of a bar starts a new bar there,
/// which is how sequencers read such files.
///
/// Only files in musical time have bars: formats 0 and 1 with a ticks-per-quarter division.
/// SMPTE-timed files and format 2 (independent sequences) have none; positions in them are
/// given in seconds.
public struct MIDIBarMap: Sendable, Equatable {
    /// A stretch of constant meter starting at `tick`, the first tick of bar `bar` (1-based).
    struct MeterSegment: Sendable, Equatable {
        var tick: Int
        var bar: Int
        var meter: MIDIMeter
    }

    public let ticksPerQuarter: Int
    let tempo: MIDITempoMap
    let segments: [MeterSegment]
    /// The song's last tick (End of Track of its longest track).
    public let endTick: Int

    /// The bar map of `file`, or nil when the file has no bars (SMPTE timing, format 2).
    /// `tempo` is the file's tempo map when the caller already has it (a song shares one copy).
    public init?(file: MIDIFile, tempo: MIDITempoMap? = nil) {
        guard file.format != .sequentialTracks, case .ticksPerQuarterNote(let ppq) = file.division, ppq > 0 else { return nil }
        var changes: [(tick: Int, meter: MIDIMeter)] = []
        for track in file.tracks {
            for event in track.events {
                guard let meter = Self.meter(of: event.kind) else { continue }
                changes.append((event.tick, meter))
            }
        }
        self.init(ticksPerQuarter: Int(ppq), tempo: tempo ?? MIDITempoMap(file: file, tracks: file.tracks.indices),
                  meterChanges: changes, endTick: file.tracks.map(\.endTick).max() ?? 0)
    }

    /// The meter a time-signature meta event sets, if the event is one (and a valid one).
    static func meter(of kind: MIDITrackEvent.Kind) -> MIDIMeter? {
        guard case .meta(MIDIMetaType.timeSignature, let data) = kind, data.count >= 2 else { return nil }
        return MIDIMeter(numerator: Int(data[0]), denominatorPower: Int(data[1]))
    }

    /// A map from meter changes as (tick, meter), in any order (ties: the last wins).
    public init(ticksPerQuarter: Int, tempo: MIDITempoMap, meterChanges: [(tick: Int, meter: MIDIMeter)], endTick: Int) {
        self.ticksPerQuarter = ticksPerQuarter
        self.tempo = tempo
        self.endTick = endTick
        let ordered = meterChanges.enumerated().sorted { ($0.element.tick, $0.offset) < ($1.element.tick, $1.offset) }.map(\.element)
        var segments = [MeterSegment(tick: 0, bar: 1, meter: .fourFour)]
        for change in ordered where change.tick >= 0 {
            let last = segments[segments.count - 1]
            if change.tick == last.tick {
                segments[segments.count - 1].meter = change.meter
                continue
            }
            let barTicks = last.meter.barTicks(ticksPerQuarter: ticksPerQuarter)
            let elapsed = change.tick - last.tick
            // A change inside a bar starts a new bar: the partial bar counts as one.
            let bars = (elapsed + barTicks - 1) / barTicks
            segments.append(MeterSegment(tick: change.tick, bar: last.bar + bars, meter: change.meter))
        }
        self.segments = segments
    }

    /// How many bars the song has (the bar its last tick falls in; a song ending exactly on a
    /// bar line does not count the empty bar after it).
    public var barCount: Int {
        guard endTick > 0 else { return 1 }
        return position(atTick: endTick - 1).bar
    }

    /// The tick where `position` falls; throws if the bar or beat does not exist.
    public func tick(of position: MIDIBarPosition) throws(MIDIPositionError) -> Int {
        guard position.bar >= 1, position.bar <= barCount + 1 else {
            throw .noSuchBar(position.bar, bars: barCount)
        }
        let segment = segments.last { $0.bar <= position.bar } ?? segments[0]
        guard position.beat >= 1, position.beat <= segment.meter.numerator else {
            throw .noSuchBeat(position.beat, bar: position.bar, beats: segment.meter.numerator)
        }
        let beatTicks = segment.meter.beatTicks(ticksPerQuarter: ticksPerQuarter)
        guard position.tick >= 0, position.tick < beatTicks else {
            throw .noSuchTick(position.tick, beatTicks: beatTicks)
        }
        let barTicks = segment.meter.barTicks(ticksPerQuarter: ticksPerQuarter)
        return segment.tick + (position.bar - segment.bar) * barTicks + (position.beat - 1) * beatTicks + position.tick
    }

    /// Seconds from the start of the song to `position`.
    public func seconds(of position: MIDIBarPosition) throws(MIDIPositionError) -> Double {
        tempo.seconds(atTick: try tick(of: position))
    }

    /// The bar, beat and tick `tick` falls in.
    public func position(atTick tick: Int) -> MIDIBarPosition {
        let tick = max(0, tick)
        let segment = segments.last { $0.tick <= tick } ?? segments[0]
        let barTicks = segment.meter.barTicks(ticksPerQuarter: ticksPerQuarter)
        let beatTicks = segment.meter.beatTicks(ticksPerQuarter: ticksPerQuarter)
        let inSegment = tick - segment.tick
        let inBar = inSegment % barTicks
        return MIDIBarPosition(bar: segment.bar + inSegment / barTicks, beat: inBar / beatTicks + 1, tick: inBar % beatTicks)
    }

    /// The bar, beat and tick at `seconds` from the start.
    public func position(atSeconds seconds: Double) -> MIDIBarPosition {
        position(atTick: tempo.tick(atSeconds: seconds))
    }

    /// The meter in force at `seconds`.
    public func meter(atSeconds seconds: Double) -> MIDIMeter {
        let tick = tempo.tick(atSeconds: seconds)
        return (segments.last { $0.tick <= tick } ?? segments[0]).meter
    }

    /// The tempo in force at `seconds`, in quarter notes per minute.
    public func quarterNotesPerMinute(atSeconds seconds: Double) -> Double {
        60_000_000 / Double(tempo.microsecondsPerQuarter(atTick: tempo.tick(atSeconds: seconds)))
    }

    /// The length of one beat of the meter in force at `seconds`, in seconds at the tempo there.
    public func beatSeconds(atSeconds seconds: Double) -> Double {
        let meter = meter(atSeconds: seconds)
        let quarters = 4.0 / Double(meter.denominator)
        return quarters * 60 / quarterNotesPerMinute(atSeconds: seconds)
    }
}

/// A time signature: `numerator` beats of a 1/`denominator` note per bar.
public struct MIDIMeter: Sendable, Equatable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int

    public static let fourFour = MIDIMeter(numerator: 4, denominator: 4)

    public init(numerator: Int, denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// From the meta event's bytes: the denominator is a power of two. Nonsense (0 beats, a
    /// denominator past 1/64) is ignored by the caller.
    init?(numerator: Int, denominatorPower: Int) {
        guard numerator >= 1, (0...6).contains(denominatorPower) else { return nil }
        self.init(numerator: numerator, denominator: 1 << denominatorPower)
    }

    func beatTicks(ticksPerQuarter: Int) -> Int { max(1, ticksPerQuarter * 4 / denominator) }
    func barTicks(ticksPerQuarter: Int) -> Int { beatTicks(ticksPerQuarter: ticksPerQuarter) * numerator }

    public var description: String { "\(numerator)/\(denominator)" }
}

/// A position in bars: bar and beat from 1, the tick within the beat from 0.
public struct MIDIBarPosition: Sendable, Equatable, CustomStringConvertible {
    public var bar: Int
    public var beat: Int
    public var tick: Int

    public init(bar: Int, beat: Int = 1, tick: Int = 0) {
        self.bar = bar
        self.beat = beat
        self.tick = tick
    }

    /// `17:3:120`, or `17:3`, or `17` where the rest is the start.
    public var description: String {
        tick != 0 ? "\(bar):\(beat):\(tick)" : beat != 1 ? "\(bar):\(beat)" : "\(bar)"
    }
}

/// Why a position does not exist in a song.
public enum MIDIPositionError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchBar(Int, bars: Int)
    case noSuchBeat(Int, bar: Int, beats: Int)
    case noSuchTick(Int, beatTicks: Int)
    /// The file has no bars (SMPTE timing or format 2).
    case noBars
    case malformed(String)

    public var description: String {
        switch self {
        case let .noSuchBar(bar, bars): "there is no bar \(bar): the song has \(bars) bar\(bars == 1 ? "" : "s")"
        case let .noSuchBeat(beat, bar, beats): "there is no beat \(beat) in bar \(bar): it has \(beats) beats"
        case let .noSuchTick(tick, beatTicks): "tick \(tick) is past the beat, which has \(beatTicks) ticks"
        case .noBars: "the song has no bars (SMPTE timing or a format 2 file): give the position in seconds, like 12.5s"
        case let .malformed(text):
            "'\(text)' is not a position: give BAR[:BEAT[:TICK]] (like 17 or 17:3) or seconds (like 12.5s)"
        }
    }
}
