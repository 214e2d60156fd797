/// A Standard MIDI File as stored: header, tracks and every event in tick time.
///
/// This is the reader's lower level, kept so tests and tools can inspect exactly what a file
/// holds (meta events, skipped system messages, where each event sits in the file). Playback
/// uses `MIDISong`, built from this by `MIDISong(_:limits:)` through the tempo map.
public struct MIDIFile: Sendable, Equatable {
    public var format: MIDIFileFormat
    public var division: MIDITimeDivision
    public var tracks: [MIDITrack]
    /// Deviations from the standard the reader tolerated, in file order (see `MIDIFileWarning`).
    public var warnings: [MIDIFileWarning]

    public init(format: MIDIFileFormat, division: MIDITimeDivision, tracks: [MIDITrack], warnings: [MIDIFileWarning] = []) {
        self.format = format
        self.division = division
        self.tracks = tracks
        self.warnings = warnings
    }
}

/// How the tracks of a file relate in time.
public enum MIDIFileFormat: UInt16, Sendable, Equatable {
    /// Format 0: one track holding every channel.
    case singleTrack = 0
    /// Format 1: tracks play together and share one tempo map.
    case simultaneousTracks = 1
    /// Format 2: each track is its own sequence, with its own tempo map, played one after another.
    case sequentialTracks = 2
}

/// What a tick means: a fraction of a quarter note (scaled by the tempo) or of an SMPTE frame.
public enum MIDITimeDivision: Sendable, Equatable {
    case ticksPerQuarterNote(UInt16)
    /// Absolute time: the tempo map does not apply.
    case smpte(framesPerSecond: SMPTEFrameRate, ticksPerFrame: UInt8)
}

/// The four SMPTE frame rates a header can name (its high byte is the negated rate).
public enum SMPTEFrameRate: Int, Sendable, Equatable {
    case fps24 = 24, fps25 = 25
    /// 29.97 frames per second (NTSC drop frame), written as -29 in the header.
    case fps29_97DropFrame = 29
    case fps30 = 30

    /// Frames per second as a number: 30000/1001 for drop frame.
    public var framesPerSecond: Double {
        self == .fps29_97DropFrame ? 30000.0 / 1001.0 : Double(rawValue)
    }
}

/// One MTrk chunk.
public struct MIDITrack: Sendable, Equatable {
    /// Events in file order, each with its absolute tick from the start of the track.
    public var events: [MIDITrackEvent]
    /// The first Sequence/Track Name meta event (0x03), decoded as UTF-8 or else Latin-1.
    public var name: String?
    /// Tick of the End of Track meta event, or of the last event when the track has none.
    public var endTick: Int
    /// Byte offset of the chunk's "MTrk" tag in the file.
    public var chunkOffset: Int

    public init(events: [MIDITrackEvent], name: String? = nil, endTick: Int, chunkOffset: Int = 0) {
        self.events = events
        self.name = name
        self.endTick = endTick
        self.chunkOffset = chunkOffset
    }
}

/// An event of a track at its absolute tick.
public struct MIDITrackEvent: Sendable, Equatable {
    /// Ticks from the start of the track (sum of the delta times so far).
    public var tick: Int
    /// Byte offset of the event's status byte (or first data byte under running status).
    public var offset: Int
    public var kind: Kind

    public init(tick: Int, offset: Int, kind: Kind) {
        self.tick = tick
        self.offset = offset
        self.kind = kind
    }

    public enum Kind: Sendable, Equatable {
        /// A channel voice or mode message.
        case channel(MIDIMessage)
        /// A complete system-exclusive message (F0 event, possibly joined with F7 continuation
        /// packets), without the F0 and the closing F7. Stamped at the tick of its last packet.
        case systemExclusive([UInt8])
        /// An F7 "escape" event: raw bytes to send as they are, not a sysex continuation.
        case escape([UInt8])
        case meta(type: UInt8, data: [UInt8])
        /// A system common or real-time message (F1–F3, F6, F8–FE) that has no meaning in a file;
        /// kept for inspection and skipped by playback.
        case ignoredSystemMessage(status: UInt8, data: [UInt8])
    }
}

/// Meta event types the reader acts on.
public enum MIDIMetaType {
    public static let sequenceNumber: UInt8 = 0x00
    public static let text: UInt8 = 0x01
    public static let trackName: UInt8 = 0x03
    public static let lyric: UInt8 = 0x05
    public static let endOfTrack: UInt8 = 0x2F
    public static let tempo: UInt8 = 0x51
    public static let smpteOffset: UInt8 = 0x54
    public static let timeSignature: UInt8 = 0x58
}

/// Something the file does that the standard does not allow but that has one sensible reading,
/// so the reader accepts it and says so (the CLI can show these with `--verbose`).
public struct MIDIFileWarning: Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "byte \(offset): \(message)" }
}
