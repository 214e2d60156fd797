/// The composer's controls as a person writes them (`--loop 17-24`, `--tempo 80%`), in one place
/// for both programs: `composer-cli` checks them before it sends or renders anything, and
/// speakerd checks them again when a `play` brings them over the bus (`SpeakerdAPI` carries
/// them as they are; `Playback` turns them into a `SongArrangement`).
public struct ArrangementText: Sendable, Equatable {
    public var from: String?
    public var to: String?
    public var loop: String?
    public var loopCount: Int
    public var tempo: String?
    public var transpose: Int
    public var mute: String?
    public var solo: String?
    public var countIn: Int

    public init(from: String? = nil, to: String? = nil, loop: String? = nil, loopCount: Int = 1, tempo: String? = nil,
                transpose: Int = 0, mute: String? = nil, solo: String? = nil, countIn: Int = 0) {
        self.from = from
        self.to = to
        self.loop = loop
        self.loopCount = loopCount
        self.tempo = tempo
        self.transpose = transpose
        self.mute = mute
        self.solo = solo
        self.countIn = countIn
    }

    /// Nothing asked: the song as written.
    public var isEmpty: Bool { self == ArrangementText() }
}

/// A control written wrongly: which option, and what is wrong with it.
public struct ArrangementTextError: Error, Sendable, Equatable, CustomStringConvertible {
    public var option: String
    public var message: String

    public init(option: String, message: String) {
        self.option = option
        self.message = message
    }

    /// "--loop: 'x' is not …": the option as the person typed it.
    public var description: String { "--\(option): \(message)" }
}
