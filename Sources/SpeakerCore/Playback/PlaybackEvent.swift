/// What a `PlaybackSession` reports to its observers, in order.
public enum PlaybackEvent: Sendable, Equatable {
    /// The first audio of `title` is being produced; `durationSeconds` from the song's tempo map.
    case started(title: String, durationSeconds: Double)
    /// Emitted periodically (on the engine's clock) while playing.
    case progress(positionSeconds: Double, durationSeconds: Double)
    case paused(positionSeconds: Double)
    case resumed(positionSeconds: Double)
    /// A `stop()` ended the song early.
    case stopped(positionSeconds: Double)
    /// The song played to its end (release tail included).
    case finished(title: String)
    /// The song could not start or the output failed mid-song; `reason` is a one-line message.
    case failed(reason: String)
    /// The device stopped taking audio while the song played, in a session that holds its song
    /// then (`holdsSongWhenOutputStops`): the song is paused where it was heard, and its owner
    /// either resumes it (a new stream) or stops it. `reason` is the device's one-line failure.
    case outputStopped(reason: String)
}

/// Where a `PlaybackSession` is in its lifecycle.
public enum PlaybackState: Sendable, Equatable {
    /// Not started yet.
    case idle
    /// Started; waits for the soundfont or the output to be ready.
    case loading
    case playing
    case paused
    /// The song was stopped early.
    case stopped
    /// The song played to its end.
    case finished
    /// The song could not start or failed, with a one-line reason.
    case failed(String)
}

/// A request the session cannot honour in its current state.
public struct PlaybackSessionError: Error, Equatable, Sendable {
    public var operation: String
    public var state: PlaybackState
}

extension PlaybackSessionError: CustomStringConvertible {
    public var description: String {
        "cannot \(operation): playback is \(state.name)"
    }
}

extension PlaybackState {
    /// A short lower-case word for messages and `--json` output.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .loading: "loading"
        case .playing: "playing"
        case .paused: "paused"
        case .stopped: "stopped"
        case .finished: "finished"
        case .failed: "failed"
        }
    }
}
