/// A snapshot of the engine for `composer-cli status` and the daemon's D-Bus properties.
///
/// Its coded keys are the stable `--json` keys of `status` → `playback`: `state`, `file`,
/// `positionSeconds`, `durationSeconds`. Scripts depend on them: never rename one.
public struct PlaybackStatus: Sendable, Equatable, Codable {
    /// `PlaybackState.name`: idle, loading, playing, paused, stopped, finished or failed.
    public var state: String
    /// The display name of the current or last song (what the client sent), nil before any.
    public var file: String?
    public var positionSeconds: Double
    public var durationSeconds: Double
    /// Why the last song failed, when `state` is "failed".
    public var error: String?

    public init(state: String, file: String?, positionSeconds: Double, durationSeconds: Double, error: String? = nil) {
        self.state = state
        self.file = file
        self.positionSeconds = positionSeconds
        self.durationSeconds = durationSeconds
        self.error = error
    }
}

extension PlaybackEngine {
    /// The current state, song, position and duration in one consistent read.
    public var status: PlaybackStatus {
        let failure: String? = if case let .failed(reason) = state { reason } else { nil }
        return PlaybackStatus(state: state.name, file: title, positionSeconds: positionSeconds,
                              durationSeconds: durationSeconds, error: failure)
    }
}
