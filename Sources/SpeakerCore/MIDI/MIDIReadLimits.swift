/// Bounds the reader enforces so that a hostile file costs bounded memory and time.
///
/// A Standard MIDI File is tiny compared with these figures (the largest song in the jazz-soft
/// corpus is 86 KB with a few thousand events), so the defaults never get in a real user's way
/// while a crafted file cannot make the daemon allocate gigabytes or schedule a week of silence.
public struct MIDIReadLimits: Sendable, Equatable {
    /// Largest file accepted, RMID wrapper included.
    public var maxFileBytes: Int
    /// Most track chunks a header may declare.
    public var maxTracks: Int
    /// Most events (channel, meta, sysex and skipped system messages) over all tracks.
    public var maxEvents: Int
    /// Largest system-exclusive message, after joining its packets.
    public var maxSysExBytes: Int
    /// Longest song, in seconds by the tempo map: a file of huge delta times is a hang in disguise.
    public var maxDurationSeconds: Double
    /// Most warnings kept; the rest are counted in one last warning. A file of millions of
    /// skipped real-time bytes must not cost a string each.
    public var maxWarnings: Int

    public init(
        maxFileBytes: Int = 16 << 20,
        maxTracks: Int = 1024,
        maxEvents: Int = 4_000_000,
        maxSysExBytes: Int = 1 << 20,
        maxDurationSeconds: Double = 24 * 60 * 60,
        maxWarnings: Int = 100
    ) {
        self.maxFileBytes = maxFileBytes
        self.maxTracks = maxTracks
        self.maxEvents = maxEvents
        self.maxSysExBytes = maxSysExBytes
        self.maxDurationSeconds = maxDurationSeconds
        self.maxWarnings = maxWarnings
    }

    /// 16 MiB, 1024 tracks, 4 million events, 1 MiB per sysex, 24 hours, 100 warnings.
    public static let `default` = MIDIReadLimits()

    /// Which limit a file went over; named in the error so a user knows what to change.
    public enum Limit: Sendable, Equatable {
        case fileBytes, tracks, events, sysExBytes, durationSeconds

        var noun: String {
            switch self {
            case .fileBytes: "file size in bytes"
            case .tracks: "number of tracks"
            case .events: "number of events"
            case .sysExBytes: "system-exclusive message size in bytes"
            case .durationSeconds: "song duration in seconds"
            }
        }
    }
}
