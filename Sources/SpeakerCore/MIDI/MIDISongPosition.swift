/// A place in a song as a person writes it: `17`, `17:3`, `17:3:120` (bar, beat, tick within
/// the beat), or `12.5s` (seconds from the start).
public enum MIDISongPosition: Sendable, Equatable, CustomStringConvertible {
    case bars(MIDIBarPosition)
    case seconds(Double)

    /// Parses `BAR[:BEAT[:TICK]]` or `SECONDSs`; one clear error for anything else.
    public init(parsing text: String) throws(MIDIPositionError) {
        let trimmed = text.trimmingWhitespace
        if trimmed.hasSuffix("s") {
            guard let seconds = Double(trimmed.dropLast()), seconds.isFinite, seconds >= 0 else {
                throw .malformed(text)
            }
            self = .seconds(seconds)
            return
        }
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) && $0.count <= 9 }) else {
            throw .malformed(text)
        }
        let numbers = parts.map { Int($0)! }
        self = .bars(MIDIBarPosition(bar: numbers[0], beat: numbers.count > 1 ? numbers[1] : 1, tick: numbers.count > 2 ? numbers[2] : 0))
    }

    /// Parses a place where something ends (`--to`, a loop's `B`), in the one bar convention
    /// every control follows: a whole bar is included, so `16` ends where bar 17 begins; a beat
    /// or a tick (`16:3`) or seconds end exactly there.
    public init(parsingEnd text: String) throws(MIDIPositionError) {
        let position = try MIDISongPosition(parsing: text)
        if case .bars(let place) = position, !text.contains(":") {
            self = .bars(MIDIBarPosition(bar: place.bar + 1))
        } else {
            self = position
        }
    }

    /// Seconds from the start of `song`; throws if the song has no such bar or no bars at all.
    /// A bar is any from the first to the one after the last (where the song ends), so a place
    /// that starts something wants `startSeconds`.
    public func seconds(in song: MIDISong) throws(MIDIPositionError) -> Double {
        switch self {
        case .seconds(let seconds):
            return seconds
        case .bars(let position):
            guard let bars = song.bars else { throw .noBars }
            do {
                return try bars.seconds(of: position)
            } catch .noSuchBar(let bar, let count) where position.beat == 1 && position.tick == 0 && bar > count + 1 {
                // A whole bar as an end was read as the start of the next (`parsingEnd`): name the
                // bar the person wrote.
                throw .noSuchBar(bar - 1, bars: count)
            }
        }
    }

    /// Seconds from the start of `song` of a place something starts at (`--from`, `seek`, a
    /// loop's `A`): as `seconds(in:)`, but a bar past the last is named as such, never taken for
    /// the song's end.
    public func startSeconds(in song: MIDISong) throws(MIDIPositionError) -> Double {
        if case .bars(let position) = self, let bars = song.bars, position.bar > bars.barCount {
            throw .noSuchBar(position.bar, bars: bars.barCount)
        }
        return try seconds(in: song)
    }

    public var description: String {
        switch self {
        case .bars(let position): position.description
        case .seconds(let seconds): "\(seconds)s"
        }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

private extension String {
    var trimmingWhitespace: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<max(start, end)]
    }
}
