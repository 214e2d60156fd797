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

    /// Seconds from the start of `song`; throws if the song has no such bar or no bars at all.
    public func seconds(in song: MIDISong) throws(MIDIPositionError) -> Double {
        switch self {
        case .seconds(let seconds):
            return seconds
        case .bars(let position):
            guard let bars = song.bars else { throw .noBars }
            return try bars.seconds(of: position)
        }
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
