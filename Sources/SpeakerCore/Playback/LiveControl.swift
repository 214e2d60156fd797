import MIDI

/// One of the composer's controls while a song plays (`composer-cli seek 17`, `loop 17-24`,
/// `tempo 80%`, `transpose -2`, `mute drums`, `solo 1,2`, `unmute`).
///
/// Each one changes the song's arrangement where the song is now: the player works out the
/// place in the written song, applies the control to the arrangement from there
/// (``applied(to:at:in:passesLeft:)``), lays the song out again (`SongArrangement.arrangeLive`) and the
/// render loop takes the new timeline up at its next block, chasing the song's state there as a
/// seek does. Tempo, transpose, mute and solo are absolute (`transpose 0` is the written key,
/// `tempo 100%` the written tempo), so asking twice is asking once.
public enum LiveControl: Sendable, Equatable, CustomStringConvertible {
    /// Go to a place in the written song.
    case seek(MIDISongPosition)
    /// Go that many bars forward (or back, when negative) from the bar playing now.
    case seekBars(Int)
    /// Loop a section until the loop is turned off (nil): gapless, the state at its start
    /// restored on every pass.
    case loop(LoopSection?)
    case tempo(TempoChange)
    case transpose(Int)
    /// Silence these parts too.
    case mute([SongPart])
    /// Play only these parts (replacing an earlier solo).
    case solo([SongPart])
    /// Every part sounds again (mute and solo cleared).
    case unmute

    /// The names the wire and the command line use, one per control.
    public static let names = ["seek", "loop", "tempo", "transpose", "mute", "solo", "unmute"]

    /// Reads a control as composer-cli sends it: its name and its value as the person wrote it
    /// (`seek 17:3`, `seek +2`, `loop 17-24`, `loop off`, `tempo 80%`, `transpose -2`,
    /// `mute drums,10`, `unmute` with an empty value). One clear line for anything else.
    public init(name: String, value: String) throws(LiveControlError) {
        let text = value.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        func refuse(_ message: String) -> LiveControlError { LiveControlError(control: name, message: message) }
        switch name {
        case "seek":
            if let first = text.first, first == "+" || first == "-" {
                guard let bars = Int(text.dropFirst()), bars > 0, bars <= 100_000 else {
                    throw refuse("'\(text)' is not a number of bars: write +N or -N")
                }
                self = .seekBars(first == "+" ? bars : -bars)
            } else {
                do { self = .seek(try MIDISongPosition(parsing: text)) } catch { throw refuse("\(error)") }
            }
        case "loop":
            if text.lowercased() == "off" {
                self = .loop(nil)
            } else {
                do { self = .loop(try LoopSection(parsing: text)) } catch { throw refuse("\(error) (or 'off')") }
            }
        case "tempo":
            guard let tempo = TempoChange(parsing: text) else {
                throw refuse("'\(text)' is not a tempo: give a percentage (80%) or beats per minute (96bpm)")
            }
            self = .tempo(tempo)
        case "transpose":
            let digits = text.hasPrefix("+") ? String(text.dropFirst()) : text
            guard let semitones = Int(digits), SongArrangement.transposeRange.contains(semitones) else {
                throw refuse("'\(text)' is not -48 to +48 semitones")
            }
            self = .transpose(semitones)
        case "mute", "solo":
            let parts = SongPart.list(parsing: text)
            guard !parts.isEmpty else { throw refuse("name channels (1-16) or tracks, separated by commas") }
            self = name == "mute" ? .mute(parts) : .solo(parts)
        case "unmute":
            guard text.isEmpty else { throw refuse("takes nothing after it") }
            self = .unmute
        default:
            throw LiveControlError(control: name, message: "is not a control (\(Self.names.joined(separator: ", ")))")
        }
    }

    /// The control's name on the wire.
    public var name: String {
        switch self {
        case .seek, .seekBars: "seek"
        case .loop: "loop"
        case .tempo: "tempo"
        case .transpose: "transpose"
        case .mute: "mute"
        case .solo: "solo"
        case .unmute: "unmute"
        }
    }

    /// The control's value as `init(name:value:)` reads it back.
    public var value: String {
        switch self {
        case .seek(let position): position.description
        case .seekBars(let bars): bars > 0 ? "+\(bars)" : "\(bars)"
        case .loop(let section): section?.description ?? "off"
        case .tempo(let tempo):
            switch tempo {
            case .percent(let percent): "\(percent)%"
            case .beatsPerMinute(let bpm): "\(bpm)bpm"
            }
        case .transpose(let semitones): "\(semitones)"
        case .mute(let parts), .solo(let parts): parts.map(\.name).joined(separator: ",")
        case .unmute: ""
        }
    }

    public var description: String { value.isEmpty ? name : "\(name) \(value)" }

    /// The arrangement after this control, the song being at `seconds` of the written song now;
    /// the player lays it out next, which refuses what does not fit the song.
    ///
    /// The song goes on from where it is (a seek: from its target), with no count-in. A seek
    /// outside a loop's section turns the loop off; a loop set while the song is outside its
    /// section goes to the section's start. A loop set here repeats until it is turned off; a
    /// counted loop (`--loop-count N`) that the control leaves in place plays `passesLeft`
    /// (`SongArrangement.passesLeft`: where the song is on its arranged timeline), so the
    /// control does not forget the count.
    public func applied(to arrangement: SongArrangement, at seconds: Double, in song: MIDISong, passesLeft: Int? = nil)
        throws(SongArrangementError) -> SongArrangement {
        var next = arrangement
        next.countInBars = 0
        next.from = .seconds(seconds)
        switch self {
        case .seek(let position):
            let target: Double
            do { target = try position.startSeconds(in: song) } catch { throw .position(error) }
            guard target < song.durationSeconds else { throw .startsAfterEnd(start: target, end: song.durationSeconds) }
            next.from = .seconds(target)
            if let section = try Self.section(of: arrangement.loop, in: song), !(section.start <= target && target < section.end) {
                next.loop = nil
                next.loopPasses = 1
            }
        case .seekBars(let bars):
            guard let map = song.bars else { throw .position(.noBars) }
            let now = map.position(atSeconds: seconds)
            let bar = min(max(1, now.bar + bars), map.barCount)
            let target: Double
            do { target = try map.seconds(of: MIDIBarPosition(bar: bar)) } catch { throw .position(error) }
            return try LiveControl.seek(.seconds(target)).applied(to: arrangement, at: seconds, in: song, passesLeft: passesLeft)
        case .loop(let section):
            next.loop = section
            next.loopPasses = section == nil ? 1 : 0
            // An inverted or empty section is refused by the layout that follows (`emptyLoop`).
            if let bounds = try Self.section(of: section, in: song), !(bounds.start <= seconds && seconds < bounds.end) {
                next.from = .seconds(bounds.start)
            }
        case .tempo(let tempo):
            next.tempo = tempo == .percent(100) ? nil : tempo
        case .transpose(let semitones):
            next.transpose = semitones
        case .mute(let parts):
            next.mute = arrangement.mute + parts.filter { !arrangement.mute.contains($0) }
        case .solo(let parts):
            next.solo = parts
        case .unmute:
            next.mute = []
            next.solo = []
        }
        if case .loop = self {} else if let passesLeft, next.loop != nil, next.loop == arrangement.loop {
            next.loopPasses = passesLeft
        }
        // Whether it fits the song (a track named that way, a tempo in range) is for the layout
        // that follows (`arrangeLive`) to say: it throws the same errors.
        return next
    }

    private static func section(of loop: LoopSection?, in song: MIDISong) throws(SongArrangementError) -> (start: Double, end: Double)? {
        guard let loop else { return nil }
        do {
            return (try loop.start.startSeconds(in: song), try loop.end.seconds(in: song))
        } catch {
            throw .position(error)
        }
    }
}

/// A control that cannot be read, in one line: "seek: bar 0 does not exist …".
public struct LiveControlError: Error, Sendable, Equatable, CustomStringConvertible {
    public var control: String
    public var message: String

    public init(control: String, message: String) {
        self.control = control
        self.message = message
    }

    public var description: String { "\(control): \(message)" }
}

extension SongPart {
    /// The part as a person named it, and as `SongPart.list(parsing:)` reads it back: a
    /// channel's number, a track's name.
    public var name: String {
        switch self {
        case .channel(let number): String(number)
        case .track(let name): name
        }
    }
}
