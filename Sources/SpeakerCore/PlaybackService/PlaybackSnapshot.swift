import Playback
import SpeakerdAPI
/// What the player is doing: the current (or last) song and the queue behind it.
///
/// The one playback status type inside speakerd: `Player.snapshot()` returns it, its change
/// stream yields it after every change, and the daemon maps it to the API's record
/// (`StatusReport.Playback`, the stable `--json` keys) only when it answers a client.
public struct PlaybackSnapshot: Sendable, Equatable {
    /// What the player is doing, in the words `composer-cli status` uses.
    public enum Activity: String, Sendable, Equatable, CaseIterable {
        /// No song: nothing was played yet, or the last one finished and the queue is empty.
        case idle
        /// A song waits in the readiness gate for the speaker's audio path.
        case waiting
        case playing
        /// Held by the user, or because the speaker dropped (see ``PauseReason``).
        case paused
        /// The last song was stopped early (by the user, or by `on_speaker_lost = stop`).
        case stopped
        /// The last song's output failed mid-song (the device went away, the sound server
        /// stopped), or it could not start; ``PlaybackSnapshot/error`` says why.
        case failed
    }

    /// Why a song is paused: the user's pause waits for `resume`; a speaker loss resumes by itself.
    public enum PauseReason: String, Sendable, Equatable {
        case user
        case speakerLost
    }

    public var activity: Activity
    /// The song's display name, as the client sent it.
    public var file: String?
    /// Seconds played of the song; nil when there is no song.
    public var positionSeconds: Double?
    /// The song's length from its tempo map; nil when there is no song.
    public var durationSeconds: Double?
    /// Set while `activity` is `.paused`.
    public var pauseReason: PauseReason?
    /// The songs queued behind the current one, in play order: display name and length.
    public var queued: [StatusReport.QueuedSong]
    /// Why the last song failed, while `activity` is `.failed`.
    public var error: String?
    /// The composer's controls the current song plays with; nil while it plays as written.
    public var controls: StatusReport.Controls?
    /// Where the song is in its bars and beats, when that can be told (see `StatusReport.Playback`).
    public var musicalPosition: StatusReport.MusicalPosition?
    /// The output's latency, which `positionSeconds` already subtracts (the heard position);
    /// nil for an output that reports none (a file, null) and when no song plays.
    public var latencySeconds: Double?

    public init(activity: Activity, file: String? = nil, positionSeconds: Double? = nil,
                durationSeconds: Double? = nil, pauseReason: PauseReason? = nil, queued: [StatusReport.QueuedSong] = [],
                error: String? = nil) {
        self.activity = activity
        self.file = file
        self.positionSeconds = positionSeconds
        self.durationSeconds = durationSeconds
        self.pauseReason = pauseReason
        self.queued = queued
        self.error = error
    }

    public static let idle = PlaybackSnapshot(activity: .idle)
}

extension StatusReport.Playback {
    /// The `playback` record of the API (`composer-cli status --json`: `state`, `file`,
    /// `positionSeconds`, `durationSeconds`, `error`) for the player's snapshot: the one place the
    /// two meet.
    public init(_ snapshot: PlaybackSnapshot) {
        self.init(state: snapshot.activity.rawValue, file: snapshot.file, positionSeconds: snapshot.positionSeconds,
                  durationSeconds: snapshot.durationSeconds, error: snapshot.error, queue: snapshot.queued,
                  controls: snapshot.controls, musicalPosition: snapshot.musicalPosition,
                  latencyMs: snapshot.latencySeconds.map { Int(($0 * 1000).rounded()) })
    }
}

extension SongArrangement {
    /// The controls as `status` shows them; nil when the song plays as written (a start or an
    /// end elsewhere, or a count-in, is no lasting control).
    var controls: StatusReport.Controls? {
        let controls = StatusReport.Controls(loop: loop?.description, tempo: tempo?.description, transpose: transpose,
                                             mute: mute.map(\.name), solo: solo.map(\.name))
        return controls == StatusReport.Controls() ? nil : controls
    }
}
