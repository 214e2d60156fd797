import SpeakerdAPI
/// What the playback service is doing, in the words `composer-cli status` uses.
public enum PlaybackActivity: String, Sendable, Equatable, CaseIterable {
    /// No song: nothing was played yet, or the last one finished and the queue is empty.
    case idle
    /// A song waits in the readiness gate for the speaker's audio path.
    case waiting
    case playing
    /// Held by the user, or because the speaker dropped (see ``PlaybackPauseReason``).
    case paused
    /// The last song was stopped early (by the user, or by `on_speaker_lost = stop`).
    case stopped
    /// The last song's output failed mid-song (the device went away, the sound server stopped);
    /// ``PlaybackServiceStatus/error`` says why.
    case failed
}

/// Why a song is paused: the user's pause waits for `resume`; a speaker loss resumes by itself.
public enum PlaybackPauseReason: String, Sendable, Equatable {
    case user
    case speakerLost
}

/// A snapshot of the playback service: the current (or last stopped) song and the queue.
public struct PlaybackServiceStatus: Sendable, Equatable {
    public var activity: PlaybackActivity
    /// The song's display name, as the client sent it.
    public var file: String?
    /// Seconds played of the song; nil when there is no song.
    public var positionSeconds: Double?
    /// The song's length from its tempo map; nil when there is no song.
    public var durationSeconds: Double?
    /// Set while `activity` is `.paused`.
    public var pauseReason: PlaybackPauseReason?
    /// Display names of the songs queued behind the current one, in play order.
    public var queued: [String]
    /// Why the last song failed, while `activity` is `.failed`.
    public var error: String?

    public init(activity: PlaybackActivity, file: String? = nil, positionSeconds: Double? = nil,
                durationSeconds: Double? = nil, pauseReason: PlaybackPauseReason? = nil, queued: [String] = [],
                error: String? = nil) {
        self.activity = activity
        self.file = file
        self.positionSeconds = positionSeconds
        self.durationSeconds = durationSeconds
        self.pauseReason = pauseReason
        self.queued = queued
        self.error = error
    }

    public static let idle = PlaybackServiceStatus(activity: .idle)

    /// The `playback` object of `composer-cli status --json` (keys `state`, `file`,
    /// `positionSeconds`, `durationSeconds`).
    public var report: StatusReport.Playback {
        StatusReport.Playback(state: activity.rawValue, file: file, positionSeconds: positionSeconds,
                              durationSeconds: durationSeconds, error: error)
    }
}

/// One change of the playback service, with the status right after it: the D-Bus API turns the
/// status into PropertiesChanged and the event into a signal.
public struct PlaybackChange: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// The first element of every ``PlaybackCoordinator/changes()`` stream: the status as it was.
        case current
        /// A song waits for the speaker before it starts.
        case waiting(file: String)
        /// A song was appended to the queue (`position` counts from 1, behind the current song).
        case queued(file: String, position: Int)
        /// A song's first audio is being produced.
        case started(file: String, durationSeconds: Double)
        /// The position moved (periodic while playing).
        case progress(positionSeconds: Double)
        case paused(reason: PlaybackPauseReason)
        case resumed
        /// The song was stopped early.
        case stopped(file: String)
        /// The song played to its end.
        case finished(file: String)
        /// The song could not start or its output failed; `reason` is one line.
        case failed(file: String, reason: String)
    }

    public var event: Event
    public var status: PlaybackServiceStatus

    public init(event: Event, status: PlaybackServiceStatus) {
        self.event = event
        self.status = status
    }
}
