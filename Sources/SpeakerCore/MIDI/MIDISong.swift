/// A song as speakerd plays it: every track merged into one timeline in seconds.
///
/// The reader (`MIDIFileReader`) builds this from a Standard MIDI File after validating it, so the
/// engine never sees running status, tick divisions or tempo maps: it only schedules messages
/// at exact times. That is what lets us play files FluidSynth's own player renders as silence.
public struct MIDISong: Sendable, Equatable {
    /// Every channel and system-exclusive message of every track, sorted by time (stable for ties,
    /// in track order then file order); packed, 6 bytes an event for a song read from a file.
    public var events: MIDIEventList
    /// Time of the last event (End of Track included), from the tempo map; no release tail.
    public var durationSeconds: Double
    /// The first track name (meta 0x03) of the first track that has one, if any.
    public var title: String?
    /// Every track's name, `nil` where a track has none, in file order.
    public var trackNames: [String?]
    /// What the reader tolerated in the file (running status across a meta event, a missing End
    /// of Track, skipped system messages...), for a `--verbose` listing; empty for a clean file.
    public var warnings: [MIDIFileWarning]
    /// Bars and beats (nil for a file without them: SMPTE timing, format 2, or a song built by hand).
    public var bars: MIDIBarMap?
    /// The channels (0...15) each track's channel messages use, in file order: what muting a
    /// track by its name silences.
    public var trackChannels: [Set<UInt8>]

    public init(events: MIDIEventList, durationSeconds: Double, title: String? = nil, trackNames: [String?] = [],
                warnings: [MIDIFileWarning] = [], bars: MIDIBarMap? = nil, trackChannels: [Set<UInt8>] = []) {
        self.events = events
        self.durationSeconds = durationSeconds
        self.title = title
        self.trackNames = trackNames
        self.warnings = warnings
        self.bars = bars
        self.trackChannels = trackChannels
    }

    /// A song of events given with their seconds (kept exactly as given).
    public init(events: [MIDITimedEvent], durationSeconds: Double, title: String? = nil, trackNames: [String?] = [],
                warnings: [MIDIFileWarning] = [], bars: MIDIBarMap? = nil, trackChannels: [Set<UInt8>] = []) {
        self.init(events: MIDIEventList(events), durationSeconds: durationSeconds, title: title, trackNames: trackNames,
                  warnings: warnings, bars: bars, trackChannels: trackChannels)
    }
}

/// One message at an absolute time from the start of the song.
public struct MIDITimedEvent: Sendable, Equatable {
    public var seconds: Double
    public var message: MIDIMessage

    public init(seconds: Double, message: MIDIMessage) {
        self.seconds = seconds
        self.message = message
    }
}

/// The messages a synthesiser acts on. Channels are 0...15; data bytes 0...127.
public enum MIDIMessage: Sendable, Equatable {
    case noteOff(channel: UInt8, key: UInt8, velocity: UInt8)
    case noteOn(channel: UInt8, key: UInt8, velocity: UInt8)
    case polyPressure(channel: UInt8, key: UInt8, pressure: UInt8)
    case controlChange(channel: UInt8, controller: UInt8, value: UInt8)
    case programChange(channel: UInt8, program: UInt8)
    case channelPressure(channel: UInt8, pressure: UInt8)
    /// 14-bit value, 0...16383, centre 8192.
    case pitchBend(channel: UInt8, value: UInt16)
    /// The bytes between F0 and the closing F7, both excluded.
    case systemExclusive([UInt8])
}

extension MIDIMessage {
    /// The channel (0...15) of a channel message; nil for system exclusive.
    public var channel: UInt8? {
        switch self {
        case let .noteOff(channel, _, _), let .noteOn(channel, _, _), let .polyPressure(channel, _, _),
             let .controlChange(channel, _, _), let .programChange(channel, _), let .channelPressure(channel, _),
             let .pitchBend(channel, _):
            channel
        case .systemExclusive:
            nil
        }
    }
}
