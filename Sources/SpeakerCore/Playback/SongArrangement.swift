import MIDI

/// What a composer asks of a song beyond "play it": where to start and stop, a section to loop,
/// another tempo or key, parts muted or soloed, and a count-in. Applied to the song before it is
/// scheduled, so every control is exact to the sample (our scheduler dispatches each event on
/// its own frame).
///
/// The rules a sequencer follows, and so do we:
/// - **Starting anywhere chases the song's state.** The system-exclusive messages, programs
///   (with their bank), controllers, pitch bend and channel pressure in force at the start are
///   sent before its first note; a note that began earlier does not sound, and its note-off is
///   dropped, so nothing hangs.
/// - **A section loop is seamless.** At its end every note still held is released (and the
///   sustain pedal lifted); the state at its start is restored (controllers reset, then chased)
///   and its first events follow on the same frame: no gap, no drift, whatever the pass.
/// - **Tempo** scales time only; the synthesiser's pitch is untouched.
/// - **Transpose** moves every note but percussion (channel 10).
/// - **Mute and solo** silence notes by channel or by track name; controllers and programs still
///   go through, so a part unmuted later sounds as it should.
/// - **Count-in** clicks (GM percussion, channel 10) for N bars in the song's meter at the start,
///   at the tempo played.
public struct SongArrangement: Sendable, Equatable {
    public var from: MIDISongPosition?
    public var to: MIDISongPosition?
    /// The section to loop, played `loopPasses` times (its start is where the song starts when no
    /// `from` is given).
    public var loop: LoopSection?
    /// How many times the loop plays; 0: until it is turned off (`play --loop` without
    /// `--loop-count`, live only: `arrangeLive`).
    public var loopPasses: Int
    public var tempo: TempoChange?
    /// Semitones, -48...48.
    public var transpose: Int
    public var mute: [SongPart]
    public var solo: [SongPart]
    public var countInBars: Int
    /// Not a control of the composer's: for one layout, the notes sounding where the song starts
    /// are struck again there (a seek leaves them silent). A song going on after its output died
    /// goes back to where the listener stopped hearing it, often in the middle of a note.
    public var restrikesHeldNotes = false

    public init(from: MIDISongPosition? = nil, to: MIDISongPosition? = nil, loop: LoopSection? = nil, loopPasses: Int = 1,
                tempo: TempoChange? = nil, transpose: Int = 0, mute: [SongPart] = [], solo: [SongPart] = [], countInBars: Int = 0) {
        self.from = from
        self.to = to
        self.loop = loop
        self.loopPasses = loopPasses
        self.tempo = tempo
        self.transpose = transpose
        self.mute = mute
        self.solo = solo
        self.countInBars = countInBars
    }

    /// Whether the section loop repeats until it is turned off (live play only).
    public var loopsUntilTurnedOff: Bool { loop != nil && loopPasses == 0 }

    /// Whether the song plays as written.
    public var isIdentity: Bool { self == SongArrangement() }

    /// The longest loop count and count-in accepted: more is surely a typo, and the result must
    /// stay within the reader's limits.
    public static let maxLoopPasses = 1000
    public static let maxCountInBars = 16
    public static let transposeRange = -48...48
    /// Tempo as a percentage of the written one.
    public static let tempoPercentRange = 10.0...400.0

    /// Percussion: the GM drum channel (10, numbered from 1).
    static let percussionChannel: UInt8 = 9

    /// The song as arranged, or one clear error for a control that does not fit it.
    public func arrange(_ song: MIDISong, limits: MIDIReadLimits = .default) throws(SongArrangementError) -> MIDISong {
        // A loop until `loop off` is live play's alone: laid out here it would be one pass.
        guard !loopsUntilTurnedOff else { throw .loopPasses(loopPasses) }
        return try arranged(song, limits: limits).song
    }

    /// The song as laid for playing or rendering, with the seams of its section loop (the start of
    /// each pass after the way in) for the scheduler, which lays every pass on the same samples
    /// (`SongScheduler`): a loop until `loop off` as `arrangeLive` lays it, any other as `arrange`.
    public func arranged(_ song: MIDISong, limits: MIDIReadLimits = .default) throws(SongArrangementError) -> ArrangedSong {
        if loopsUntilTurnedOff { return try arrangeLive(song, limits: limits) }
        guard !isIdentity else { return ArrangedSong(song: song) }
        guard loopPasses >= 1 else { throw .loopPasses(loopPasses) }
        return try lay(song, limits: limits, loopingLive: false)
    }

    /// The song as played live (`seek`, `loop` and the other controls while a song plays): like
    /// `arrange`, but a section loop is laid down once, the way in and then one pass, and the
    /// scheduler plays that pass again and again until the loop is turned off
    /// (``ArrangedSong/loopStart``), so a loop held for an hour takes the memory of one pass.
    /// Without a loop it is `arrange`.
    public func arrangeLive(_ song: MIDISong, limits: MIDIReadLimits = .default) throws(SongArrangementError) -> ArrangedSong {
        guard loop != nil else { return ArrangedSong(song: try arrange(song, limits: limits), loopStart: nil) }
        return try lay(song, limits: limits, loopingLive: true)
    }

    /// Where the song starts and stops, the loop's section and the tempo factor, in song seconds.
    struct Layout {
        var start: Double
        var stop: Double
        var section: (start: Double, end: Double)?
        var factor: Double
        /// The count-in's clicks and length at `start` (none without `countInBars`).
        var countIn: (events: [MIDITimedEvent], seconds: Double)
    }

    func layout(of song: MIDISong) throws(SongArrangementError) -> Layout {
        guard ((loop == nil ? 1 : 0)...Self.maxLoopPasses).contains(loopPasses) else { throw .loopPasses(loopPasses) }
        guard (0...Self.maxCountInBars).contains(countInBars) else { throw .countIn(countInBars) }
        guard Self.transposeRange.contains(transpose) else { throw .transpose(transpose) }
        let start: Double, end: Double
        var section: (start: Double, end: Double)?
        do throws(MIDIPositionError) {
            if let loop { section = (try loop.start.startSeconds(in: song), try loop.end.seconds(in: song)) }
            start = try from?.startSeconds(in: song) ?? section?.start ?? 0
            end = try to?.seconds(in: song) ?? song.durationSeconds
        } catch {
            throw .position(error)
        }
        if let section, section.end <= section.start { throw .emptyLoop(loop!) }
        let stop = section?.end ?? end
        guard start < stop || (start == 0 && stop == 0) else { throw .startsAfterEnd(start: start, end: stop) }
        return Layout(start: start, stop: stop, section: section, factor: try tempoFactor(for: song),
                      countIn: countInEvents(for: song, at: start))
    }

    /// Where in the written song (its seconds) the arranged song is at `seconds` of its own
    /// timeline: before the count-in ends, the start; within a loop's passes, the place in the
    /// section. For `status`, and for the live controls, which start again from there.
    public func songSeconds(atArranged seconds: Double, in song: MIDISong) -> Double {
        guard !isIdentity, let layout = try? layout(of: song) else { return min(seconds, song.durationSeconds) }
        let written = seconds * layout.factor - layout.countIn.seconds
        guard written > 0 else { return layout.start }
        let first = layout.stop - layout.start
        if written < first { return layout.start + written }
        guard let section = layout.section else { return layout.stop }
        let length = section.end - section.start
        let intoPasses = written - first
        // Live, the scheduler repeats the one pass; offline, `loopPasses - 1` passes follow.
        guard loopPasses <= 1 || intoPasses < Double(loopPasses - 1) * length else { return section.end }
        return section.start + intoPasses.truncatingRemainder(dividingBy: length)
    }

    /// How many passes of a counted section loop (`--loop-count N`) are still to play at
    /// `seconds` of the arranged song's own timeline, the one under way included; nil without a
    /// loop, or for one that repeats until it is turned off. A live control lays the song out
    /// again from where it is with this many, so it does not forget the count.
    public func passesLeft(atArranged seconds: Double, in song: MIDISong) -> Int? {
        guard loop != nil, loopPasses >= 1, let layout = try? layout(of: song), let section = layout.section else { return nil }
        let written = seconds * layout.factor - layout.countIn.seconds
        // The first segment runs from the start to the section's end: the first pass, or the
        // rest of the pass a control was given in.
        let first = layout.stop - layout.start
        guard written >= first else { return loopPasses }
        let length = section.end - section.start
        let finished = 1 + Int(((written - first) / length).rounded(.down))
        return max(1, loopPasses - finished)
    }

    /// The song laid out: on the written song's ticks when it has them (a view of its events,
    /// `MIDIEventList.ArrangedBuilder`: a few hundred bytes beside the written song, and a bit
    /// an event where a part is muted or a note-off dropped), else, or
    /// when an added event does not fit that packing, with a `Double` of seconds an event. Both
    /// are laid by `laidOut` in one order with one formula for every time, so they hold the same
    /// events at the same seconds, to the bit.
    private func lay(_ song: MIDISong, limits: MIDIReadLimits, loopingLive: Bool) throws(SongArrangementError) -> ArrangedSong {
        let layout = try layout(of: song)
        let silenced = try silencedChannels(in: song)
        if !silenced.isEmpty { try requireSomethingAudible(in: song, layout, silenced: silenced) }
        if var view = MIDIEventList.ArrangedBuilder(written: song.events, factor: layout.factor, keyShift: keyShift),
           let laid = try laidOut(song, layout, silenced: silenced, limits: limits, loopingLive: loopingLive, into: &view) {
            return arranged(song, events: view.list(), laid)
        }
        var timed = TimedArrangedEvents(written: song.events, factor: layout.factor)
        // The seconds clock takes any event: it never refuses one.
        let laid = try laidOut(song, layout, silenced: silenced, limits: limits, loopingLive: loopingLive, into: &timed)
        return arranged(song, events: MIDIEventList(timed.events), laid ?? Laid(duration: 0, loopStart: nil, seams: []))
    }

    /// What laying out a song gives beside its events.
    struct Laid {
        var duration: Double
        var loopStart: ArrangedSong.LoopStart?
        var seams: [ArrangedSong.LoopStart]
    }

    private func arranged(_ song: MIDISong, events: MIDIEventList, _ laid: Laid) -> ArrangedSong {
        let arranged = MIDISong(events: events, durationSeconds: laid.duration, title: song.title,
                                trackNames: song.trackNames, warnings: song.warnings, bars: nil, trackChannels: song.trackChannels)
        return ArrangedSong(song: arranged, loopStart: laid.loopStart, seams: laid.seams)
    }

    /// Lays the arranged song's events into `sink`, in order: the count-in's clicks merged by time
    /// under the way in (the clicks first on a tie), then each segment (the way in, then the
    /// loop's passes): the chase of the state at its start, the written events within it (a
    /// note-off whose note began before it dropped), and the releases of what still sounds at its
    /// end; every message shaped by mute, solo and transpose. Nil when the sink refuses an event.
    ///
    /// A written event plays at `(written + its seconds - segment start) / factor` and an added one
    /// at `written / factor`, `written` being the song seconds laid down before it (count-in
    /// included): the times the arrangement always gave, computed the same way.
    private func laidOut(_ song: MIDISong, _ layout: Layout, silenced: Set<UInt8>, limits: MIDIReadLimits, loopingLive: Bool,
                         into sink: inout some ArrangedEventSink) throws(SongArrangementError) -> Laid? {
        let (start, stop, section, factor) = (layout.start, layout.stop, layout.section, layout.factor)
        let countIn = layout.countIn
        var written = countIn.seconds  // song seconds laid down so far (before the tempo change)
        var segments = [(start, stop)]
        if let section, loopingLive {
            segments.append(section)
        } else if let section, loopPasses > 1 {
            segments += Array(repeating: section, count: loopPasses - 1)
        }
        let clicks = countIn.events.map { MIDITimedEvent(seconds: $0.seconds / factor, message: $0.message) }
        var nextClick = 0
        /// The clicks due by `seconds` (all that are left for nil), before an event of the way in there.
        func addClicks(upTo seconds: Double?) -> Bool {
            while nextClick < clicks.count, seconds.map({ !($0 < clicks[nextClick].seconds) }) ?? true {
                guard sink.appendAdded(clicks[nextClick].message, seconds: clicks[nextClick].seconds) else { return false }
                nextClick += 1
            }
            return true
        }
        // Events laid so far, counted before mute or transpose drop any: what `maxEvents` bounds.
        var count = countIn.events.count
        var passStart = 0.0
        var wayIn = 0
        var seams: [ArrangedSong.LoopStart] = []
        for (index, segment) in segments.enumerated() {
            var laidHere = 0
            if index == 1 { passStart = written }
            if index >= 1 { seams.append(ArrangedSong.LoopStart(eventIndex: sink.count, seconds: written / factor)) }
            /// An event the arrangement adds at `written` (as it is now).
            func add(_ message: MIDIMessage) -> Bool {
                laidHere += 1
                guard let message = shaped(message, silenced: silenced) else { return true }
                let seconds = written / factor
                return (index > 0 || addClicks(upTo: seconds)) && sink.appendAdded(message, seconds: seconds)
            }
            for message in Self.chase(song, before: segment.0, resetFirst: index > 0) {
                guard add(message) else { return nil }
            }
            var held = HeldNotes()
            if index == 0, restrikesHeldNotes {
                for note in Self.notesSounding(in: song, at: segment.0) {
                    guard let message = held.admit(note) else { continue }
                    guard add(message) else { return nil }
                }
            }
            for event in song.events.indices {
                let seconds = song.events.seconds(at: event)
                guard seconds >= segment.0 && seconds < segment.1,
                      let message = held.admit(song.events.message(at: event)) else { continue }
                laidHere += 1
                guard count + laidHere <= limits.maxEvents else { throw .tooManyEvents(limit: limits.maxEvents) }
                guard let message = shaped(message, silenced: silenced) else { continue }
                if index == 0, nextClick < clicks.count, !addClicks(upTo: (written + seconds - segment.0) / factor) { return nil }
                sink.appendWritten(event, message: message, offset: written, origin: segment.0)
            }
            written += segment.1 - segment.0
            // Whatever still sounds at the seam ends there.
            for message in held.releases() {
                guard add(message) else { return nil }
            }
            count += laidHere
            if index == 0 {
                guard addClicks(upTo: nil) else { return nil }
                wayIn = sink.count
            }
        }
        let duration = written / factor
        guard duration <= limits.maxDurationSeconds else {
            throw .tooLong(seconds: duration, limit: limits.maxDurationSeconds)
        }
        let loopStart = loopingLive && section != nil
            ? ArrangedSong.LoopStart(eventIndex: wayIn, seconds: passStart / factor) : nil
        return Laid(duration: duration, loopStart: loopStart, seams: seams)
    }

    // MARK: - The controls

    /// The tempo a listener hears at `seconds` of the written song, in quarter notes a minute:
    /// the written tempo there times the `tempo` control; nil for a song without bars.
    public func heardQuarterNotesPerMinute(of song: MIDISong, atSeconds seconds: Double) -> Double? {
        guard let bars = song.bars, let factor = try? tempoFactor(for: song) else { return nil }
        return bars.quarterNotesPerMinute(atSeconds: seconds) * factor
    }

    /// Tempo as a factor of the written one (2 = twice as fast), the same all through the song.
    ///
    /// `96bpm` makes the song's opening tempo 96 BPM and scales every later tempo by the same
    /// factor, so a song written 120 then 90 plays 96 then 72: the tempo map keeps its shape, and
    /// `96bpm` is the same as the percentage it works out to, wherever the song starts (`--from`)
    /// or the control is given (live). So `play`, `render` and a live `tempo` agree to the frame.
    func tempoFactor(for song: MIDISong) throws(SongArrangementError) -> Double {
        switch tempo {
        case nil:
            return 1
        case .percent(let percent):
            guard Self.tempoPercentRange.contains(percent) else { throw .tempo(tempo!) }
            return percent / 100
        case .beatsPerMinute(let bpm):
            let written = song.bars?.quarterNotesPerMinute(atSeconds: 0) ?? 120
            let factor = bpm / written
            guard Self.tempoPercentRange.contains(factor * 100) else { throw .tempo(tempo!) }
            return factor
        }
    }

    /// Refuses a mute or solo that leaves no note to hear in what plays (the way in and the
    /// loop's section): a composer who soloed an empty channel, or muted and soloed the same
    /// part, would otherwise hear 45 s of silence with no word of why.
    func requireSomethingAudible(in song: MIDISong, _ layout: Layout, silenced: Set<UInt8>) throws(SongArrangementError) {
        let from = min(layout.start, layout.section?.start ?? layout.start)
        for index in song.events.indices {
            let seconds = song.events.seconds(at: index)
            if seconds >= layout.stop { break }
            guard seconds >= from, case let .noteOn(channel, key, velocity) = song.events.message(at: index), velocity > 0,
                  !silenced.contains(channel), transposed(key, on: channel) != nil else { continue }
            return
        }
        var asked: [String] = []
        if !mute.isEmpty { asked.append("mute " + mute.map(\.description).joined(separator: ", ")) }
        if !solo.isEmpty { asked.append("solo " + solo.map(\.description).joined(separator: ", ")) }
        throw .nothingAudible(asked.joined(separator: " and "))
    }

    /// The channels whose notes are silenced by `mute` and `solo`.
    func silencedChannels(in song: MIDISong) throws(SongArrangementError) -> Set<UInt8> {
        var muted = try Self.channels(of: mute, in: song)
        if !solo.isEmpty {
            let soloed = try Self.channels(of: solo, in: song)
            muted.formUnion(Set(0...15).subtracting(soloed))
        }
        return muted
    }

    static func channels(of parts: [SongPart], in song: MIDISong) throws(SongArrangementError) -> Set<UInt8> {
        var channels: Set<UInt8> = []
        for part in parts {
            switch part {
            case .channel(let number):
                guard (1...16).contains(number) else { throw .noSuchChannel(number) }
                channels.insert(UInt8(number - 1))
            case .track(let name):
                let matching = song.trackNames.indices.filter {
                    song.trackNames[$0]?.lowercased() == name.lowercased() && $0 < song.trackChannels.count
                }
                guard !matching.isEmpty else {
                    throw .noSuchTrack(name, known: song.trackNames.compactMap { $0 }.filter { !$0.isEmpty })
                }
                for index in matching { channels.formUnion(song.trackChannels[index]) }
            }
        }
        return channels
    }

    /// A message as played: transposed, or nothing for a silenced note.
    func shaped(_ message: MIDIMessage, silenced: Set<UInt8>) -> MIDIMessage? {
        switch message {
        case let .noteOn(channel, key, velocity):
            guard !silenced.contains(channel), let key = transposed(key, on: channel) else { return nil }
            return .noteOn(channel: channel, key: key, velocity: velocity)
        case let .noteOff(channel, key, velocity):
            guard let key = transposed(key, on: channel) else { return nil }
            return .noteOff(channel: channel, key: key, velocity: velocity)
        case let .polyPressure(channel, key, pressure):
            guard !silenced.contains(channel), let key = transposed(key, on: channel) else { return nil }
            return .polyPressure(channel: channel, key: key, pressure: pressure)
        default:
            return message
        }
    }

    /// A key moved by `transpose`; percussion stays; a key pushed off the keyboard is dropped.
    func transposed(_ key: UInt8, on channel: UInt8) -> UInt8? {
        keyShift.key(key, on: channel)
    }

    /// `transpose` as the MIDI layer applies it (a packed arranged song moves its notes on read).
    var keyShift: MIDIKeyShift { MIDIKeyShift(semitones: transpose, sparedChannel: Self.percussionChannel) }

    /// The count-in's clicks (in song seconds from 0) and its length: `countInBars` bars of the
    /// meter at `start`, a beat the length of the song's beat there. The first beat of each bar is
    /// accented (high wood block), the others low wood block.
    func countInEvents(for song: MIDISong, at start: Double) -> (events: [MIDITimedEvent], seconds: Double) {
        guard countInBars > 0 else { return ([], 0) }
        let beats = song.bars?.meter(atSeconds: start).numerator ?? 4
        let beat = song.bars?.beatSeconds(atSeconds: start) ?? 0.5
        let click = min(0.1, beat / 2)
        var events: [MIDITimedEvent] = []
        for index in 0..<(countInBars * beats) {
            let at = Double(index) * beat
            let key: UInt8 = index % beats == 0 ? Self.accentClick : Self.click
            events.append(MIDITimedEvent(seconds: at, message: .noteOn(channel: Self.percussionChannel, key: key, velocity: 110)))
            events.append(MIDITimedEvent(seconds: at + click, message: .noteOff(channel: Self.percussionChannel, key: key, velocity: 0)))
        }
        return (events, Double(countInBars * beats) * beat)
    }

    /// GM percussion keys: Hi Wood Block, Low Wood Block.
    public static let accentClick: UInt8 = 76
    public static let click: UInt8 = 77

    // MARK: - Chase

    /// Note-ons for the notes that began before `seconds` and still sound there (their note-off
    /// is at or after it), with the velocity each was struck with, in the song's order.
    static func notesSounding(in song: MIDISong, at seconds: Double) -> [MIDIMessage] {
        var sounding: [UInt16: [UInt8]] = [:]
        var order: [UInt16] = [], seen: Set<UInt16> = []
        for event in song.events {
            guard event.seconds < seconds else { break }
            switch event.message {
            case let .noteOn(channel, key, velocity) where velocity > 0:
                let id = UInt16(channel) << 8 | UInt16(key)
                if seen.insert(id).inserted { order.append(id) }
                sounding[id, default: []].append(velocity)
            case let .noteOn(channel, key, _), let .noteOff(channel, key, _):
                let id = UInt16(channel) << 8 | UInt16(key)
                sounding[id]?.removeFirst()
                if sounding[id]?.isEmpty == true { sounding[id] = nil }
            default:
                break
            }
        }
        return order.flatMap { id in
            (sounding[id] ?? []).map { MIDIMessage.noteOn(channel: UInt8(id >> 8), key: UInt8(id & 0xFF), velocity: $0) }
        }
    }

    /// The messages that put a synthesiser in the state the song has at `seconds`: every
    /// system-exclusive message before it, then per channel the bank and program, the other
    /// controllers, pitch bend and channel pressure last set. `resetFirst` resets each channel's
    /// controllers first (a loop's later passes, where the section itself changed them).
    static func chase(_ song: MIDISong, before seconds: Double, resetFirst: Bool) -> [MIDIMessage] {
        var exclusive: [[UInt8]] = []
        var programs = [UInt8?](repeating: nil, count: 16)
        var controllers = [[UInt8: UInt8]](repeating: [:], count: 16)
        var bends = [UInt16?](repeating: nil, count: 16)
        var pressures = [UInt8?](repeating: nil, count: 16)
        for event in song.events {
            guard event.seconds < seconds else { break }
            switch event.message {
            case .systemExclusive(let bytes): exclusive.append(bytes)
            case let .programChange(channel, program): programs[Int(channel)] = program
            case let .controlChange(channel, controller, value):
                switch controller {
                case 121: controllers[Int(channel)] = controllers[Int(channel)].filter { $0.key == 0 || $0.key == 32 || $0.key == 7 || $0.key == 10 }
                case 120, 122...127: break  // sound off, local control, notes off, modes: not state to restore
                default: controllers[Int(channel)][controller] = value
                }
            case let .pitchBend(channel, value): bends[Int(channel)] = value
            case let .channelPressure(channel, pressure): pressures[Int(channel)] = pressure
            case .noteOn, .noteOff, .polyPressure: break
            }
        }
        var messages = exclusive.map(MIDIMessage.systemExclusive)
        for channel in 0..<16 {
            let number = UInt8(channel)
            if resetFirst {
                messages.append(.controlChange(channel: number, controller: 121, value: 0))
                messages.append(.pitchBend(channel: number, value: 8192))
            }
            for bank: UInt8 in [0, 32] {
                if let value = controllers[channel][bank] { messages.append(.controlChange(channel: number, controller: bank, value: value)) }
            }
            if let program = programs[channel] { messages.append(.programChange(channel: number, program: program)) }
            for (controller, value) in controllers[channel].sorted(by: { $0.key < $1.key }) where controller != 0 && controller != 32 {
                messages.append(.controlChange(channel: number, controller: controller, value: value))
            }
            if let bend = bends[channel] { messages.append(.pitchBend(channel: number, value: bend)) }
            if let pressure = pressures[channel] { messages.append(.channelPressure(channel: number, pressure: pressure)) }
        }
        return messages
    }
}

/// The notes sounding within one stretch of the song, so that a note-off for a note begun before
/// the stretch is dropped and whatever still sounds at its end is released.
struct HeldNotes {
    private var counts: [UInt16: Int] = [:]
    private var sustained: Set<UInt8> = []

    /// The message to play, or nil for a note-off with no note-on in the stretch.
    mutating func admit(_ message: MIDIMessage) -> MIDIMessage? {
        switch message {
        case let .noteOn(channel, key, velocity) where velocity > 0:
            counts[Self.id(channel, key), default: 0] += 1
        case let .noteOn(channel, key, _), let .noteOff(channel, key, _):
            let id = Self.id(channel, key)
            guard let count = counts[id], count > 0 else { return nil }
            counts[id] = count == 1 ? nil : count - 1
        case let .controlChange(channel, 64, value):
            if value >= 64 { sustained.insert(channel) } else { sustained.remove(channel) }
        default:
            break
        }
        return message
    }

    /// Note-offs for every note still held, and the sustain pedal lifted where it is down.
    func releases() -> [MIDIMessage] {
        var messages: [MIDIMessage] = []
        for (id, count) in counts.sorted(by: { $0.key < $1.key }) {
            for _ in 0..<count { messages.append(.noteOff(channel: UInt8(id >> 8), key: UInt8(id & 0xFF), velocity: 0)) }
        }
        for channel in sustained.sorted() { messages.append(.controlChange(channel: channel, controller: 64, value: 0)) }
        return messages
    }

    private static func id(_ channel: UInt8, _ key: UInt8) -> UInt16 { UInt16(channel) << 8 | UInt16(key) }
}

/// A song as arranged for live play: its events and, for a section loop, where the pass that
/// repeats begins (the scheduler goes back there each time it reaches the end).
public struct ArrangedSong: Sendable {
    public struct LoopStart: Sendable, Equatable {
        /// The index in `song.events` of the pass's first event (its chase).
        public var eventIndex: Int
        /// Where the pass begins on the arranged timeline.
        public var seconds: Double
    }

    public var song: MIDISong
    public var loopStart: LoopStart?
    /// Where each pass of a section loop begins after the way in: the one pass that repeats, or
    /// every pass of a counted loop. The scheduler lays each on the same samples as the first.
    public var seams: [LoopStart]

    public init(song: MIDISong, loopStart: LoopStart? = nil, seams: [LoopStart]? = nil) {
        self.song = song
        self.loopStart = loopStart
        self.seams = seams ?? loopStart.map { [$0] } ?? []
    }
}

/// A section of the song to loop, `A-B`.
public struct LoopSection: Sendable, Equatable, CustomStringConvertible {
    public var start: MIDISongPosition
    public var end: MIDISongPosition

    public init(start: MIDISongPosition, end: MIDISongPosition) {
        self.start = start
        self.end = end
    }

    /// Parses `A-B` (bars like `17-24` or `17:3-24`, seconds like `10s-20.5s`). Bars are whole:
    /// `17-24` loops from the start of bar 17 to the end of bar 24.
    public init(parsing text: String) throws(MIDIPositionError) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw .malformed(text) }
        start = try MIDISongPosition(parsing: String(parts[0]))
        // "to bar 24" means through it: the loop ends where bar 25 begins, as `--to 24` does.
        end = try MIDISongPosition(parsingEnd: String(parts[1]))
    }

    /// As `init(parsing:)` reads it back, and as a person writes it: `17-24` for a loop that ends
    /// where bar 25 begins.
    public var description: String {
        if case .bars(let end) = end, end.beat == 1, end.tick == 0, end.bar > 1 { return "\(start)-\(end.bar - 1)" }
        return "\(start)-\(end)"
    }
}

/// A tempo as asked: a percentage of the written tempo, or beats per minute.
public enum TempoChange: Sendable, Equatable, CustomStringConvertible {
    case percent(Double)
    case beatsPerMinute(Double)

    /// Parses `80%` or `96bpm` (case-insensitive).
    public init?(parsing text: String) {
        let lower = text.lowercased()
        if lower.hasSuffix("%"), let value = Double(lower.dropLast()), value.isFinite {
            self = .percent(value)
        } else if lower.hasSuffix("bpm"), let value = Double(lower.dropLast(3)), value.isFinite, value > 0 {
            self = .beatsPerMinute(value)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .percent(let value): "\(value.formatted)%"
        case .beatsPerMinute(let value): "\(value.formatted) BPM"
        }
    }
}

/// A part of the song to mute or solo: a channel (1–16) or a track by its name.
public enum SongPart: Sendable, Equatable, CustomStringConvertible {
    case channel(Int)
    case track(String)

    /// Parses a comma-separated list: numbers are channels, anything else a track name.
    public static func list(parsing text: String) -> [SongPart] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }.map { item in
            Int(item).map(SongPart.channel) ?? .track(item)
        }
    }

    public var description: String {
        switch self {
        case .channel(let number): "channel \(number)"
        case .track(let name): "track '\(name)'"
        }
    }
}

/// Why an arrangement does not fit a song; one line each.
public enum SongArrangementError: Error, Sendable, Equatable, CustomStringConvertible {
    case position(MIDIPositionError)
    case emptyLoop(LoopSection)
    case startsAfterEnd(start: Double, end: Double)
    case loopPasses(Int)
    case countIn(Int)
    case transpose(Int)
    case tempo(TempoChange)
    case noSuchChannel(Int)
    case noSuchTrack(String, known: [String])
    case tooManyEvents(limit: Int)
    case tooLong(seconds: Double, limit: Double)
    /// With these mutes and solos (as a person reads them) no note is left to play.
    case nothingAudible(String)

    public var description: String {
        switch self {
        case .position(let error): "\(error)"
        case .emptyLoop(let loop): "the loop \(loop) ends where it starts or before"
        case let .startsAfterEnd(start, end): "the start (\(start.formatted) s) is not before the end (\(end.formatted) s)"
        case .loopPasses(let count): "a loop plays 1 to \(SongArrangement.maxLoopPasses) times, not \(count)"
        case .countIn(let bars): "a count-in is 0 to \(SongArrangement.maxCountInBars) bars, not \(bars)"
        case .transpose(let semitones): "transpose by -48 to +48 semitones, not \(semitones)"
        case .tempo(let tempo): "a tempo of \(tempo) is outside 10% to 400% of the written tempo"
        case .noSuchChannel(let number): "there is no channel \(number): channels are 1 to 16"
        case let .noSuchTrack(name, known):
            known.isEmpty ? "there is no track named '\(name)': the song's tracks have no names; name channels 1 to 16 instead"
                : "there is no track named '\(name)': the song has \(known.map { "'\($0)'" }.joined(separator: ", "))"
        case .tooManyEvents(let limit): "the arranged song would hold more than \(limit) events: loop fewer times"
        case let .tooLong(seconds, limit): "the arranged song would last \(seconds.formatted) s, over the \(limit.formatted) s limit"
        case let .nothingAudible(asked): "nothing would sound: with \(asked) no note is left to play"
        }
    }
}

extension Double {
    /// `80`, `12.5`: no trailing `.0`.
    fileprivate var formatted: String {
        guard abs(self) < 1e15 else { return "\(self)" }  // 1e+308 as written, not an overflow to inf
        return self == rounded() ? String(Int(self)) : String((self * 100).rounded() / 100)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
