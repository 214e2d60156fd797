import MIDI
import AsyncSignals
/// Why a playback request to the daemon failed, as the one line `composer-cli` prints.
///
/// Each case says what happened to which song and, where there is one, what to do next. The D-Bus
/// API turns ``kind`` into its error name and ``description`` into the message.
public enum PlaybackServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The song is not a MIDI file we can play; `reason` is the reader's one-line error.
    case invalidSong(file: String, reason: String)
    /// The song's file is larger (by `fstat`, before reading) than the limit for one song.
    case songTooLarge(file: String, bytes: Int, limit: Int)
    /// speakerd refuses the request now, to bound its memory: the songs being read or the
    /// queue are at a limit, which `reason` names. Trying again later may succeed.
    case busy(file: String, reason: String)
    /// The speaker's audio path did not become ready in time; `waitingFor` says what the daemon
    /// was still doing ("connecting to JBL Flip 5").
    case notReady(file: String, after: Duration, waitingFor: String)
    /// Waiting for readiness cannot succeed (the user disconnected the speaker, the soundfont is
    /// missing, the output is unusable…): `reason` says what and what to do.
    case cannotWait(file: String, reason: String)
    /// A newer `play` (without `--queue`) took the song's place before it started.
    case replaced(file: String, by: String)
    /// `stop` was asked for while the song still waited to start.
    case stoppedBeforeStart(file: String)
    /// The client gave up (its request was cancelled) before the song started.
    case cancelled(file: String)
    /// The output or the synthesiser could not start the song.
    case startFailed(file: String, reason: String)
    /// `pause`/`resume` with no song to act on.
    case nothingPlaying(operation: String)
    /// `pause` while the song still waits for the speaker.
    case notStartedYet(operation: String, file: String)
    /// A live control (seek, loop, tempo…) the song cannot take: no such bar or track, a
    /// tempo out of range. The song plays on unchanged.
    case controlRefused(operation: String, file: String, reason: String)
    /// The daemon is shutting down and takes no more songs.
    case shuttingDown

    /// A stable CamelCase name for the failure, for D-Bus error names and `--json` output.
    public var kind: String {
        switch self {
        case .invalidSong, .songTooLarge: "InvalidSong"
        case .busy: "Busy"
        case .notReady, .cannotWait: "NotReady"
        case .replaced: "Replaced"
        case .stoppedBeforeStart: "Stopped"
        case .cancelled: "Cancelled"
        case .startFailed: "StartFailed"
        case .nothingPlaying: "NothingPlaying"
        case .notStartedYet: "NotStarted"
        case .controlRefused: "InvalidControl"
        case .shuttingDown: "ShuttingDown"
        }
    }

    public var description: String {
        switch self {
        case let .invalidSong(file, reason):
            "cannot play \(file): \(reason)"
        case let .songTooLarge(file, bytes, limit):
            "\(file) is \(Mebibytes.amount(bytes, over: limit)), over the \(Mebibytes.limit(limit)) limit for one song"
        case let .busy(file, reason):
            "busy: not taking \(file) now: \(reason)"
        case let .notReady(_, after, waitingFor):
            "the speaker did not become ready within \(after.spokenSeconds): still \(waitingFor)"
        case let .cannotWait(file, reason):
            "cannot play \(file) now: \(reason)"
        case let .replaced(file, newer):
            "\(file) was replaced by \(newer) before it started"
        case let .stoppedBeforeStart(file):
            "\(file) was stopped before it started"
        case let .cancelled(file):
            "the request to play \(file) was cancelled before it started"
        case let .startFailed(file, reason):
            "cannot start \(file): \(reason)"
        case let .nothingPlaying(operation):
            "cannot \(operation): nothing is playing"
        case let .notStartedYet(operation, file):
            "cannot \(operation): \(file) has not started yet (it waits for the speaker)"
        case let .controlRefused(operation, file, reason):
            "'\(operation)' does not fit \(file): \(reason); the song plays on as it was"
        case .shuttingDown:
            "speakerd is shutting down; it takes no more songs"
        }
    }
}
