/// What `composer-cli play --wait` does after handing the song over: follows speakerd's status
/// until the song is over, reporting each status so a terminal can redraw its progress line.
///
/// It is woken by speakerd's PlaybackChanged signal when the client offers it (`wakeUps`), and
/// otherwise asks for the status every `pollInterval` (250 ms, no faster than 4 times a second).
/// The song is over when nothing plays any more, or once it has played and another song took
/// its place; a song queued behind another waits through that one first.
public struct PlaybackWaiter: Sendable {
    /// How the wait ended.
    public enum Outcome: Equatable, Sendable {
        /// The song played to its end (or the daemon went idle after it).
        case finished(StatusReport)
        /// It was stopped early; the report says where.
        case stopped(StatusReport)
        /// Another song replaced it.
        case replaced(by: String, StatusReport)
    }

    public static let minimumPollInterval: Duration = .milliseconds(250)

    let control: any SpeakerdControl
    let clock: any Clock<Duration>
    let pollInterval: Duration

    public init(control: any SpeakerdControl, clock: any Clock<Duration> = ContinuousClock(),
                pollInterval: Duration = PlaybackWaiter.minimumPollInterval) {
        self.control = control
        self.clock = clock
        self.pollInterval = max(pollInterval, Self.minimumPollInterval)
    }

    /// Waits until `file` is over; `onStatus` sees every status read meanwhile.
    ///
    /// - Parameter wakeUps: one element per PlaybackChanged signal, subscribed before the song
    ///   was sent so none is missed; nil polls instead.
    public func wait(
        for file: String,
        wakeUps: AsyncStream<Void>? = nil,
        onStatus: (StatusReport) -> Void = { _ in }
    ) async throws -> Outcome {
        var iterator = wakeUps?.makeAsyncIterator()
        var seen = false
        while true {
            let status = try await control.status()
            onStatus(status)
            let playback = status.playback
            let active = ["waiting", "playing", "paused"].contains(playback.state)
            if playback.file == file, active {
                seen = true
            } else if !active {
                return playback.state == "stopped" ? .stopped(status) : .finished(status)
            } else if seen, let other = playback.file {
                return .replaced(by: other, status)
            }
            if iterator != nil {
                // The signal stream ends with the connection: fall back to polling then.
                if await iterator?.next() == nil { iterator = nil }
            } else {
                try await clock.sleep(for: pollInterval)
            }
        }
    }
}

extension PlaybackWaiter.Outcome {
    /// The status speakerd answered last.
    public var status: StatusReport {
        switch self {
        case let .finished(status), let .stopped(status), let .replaced(_, status): status
        }
    }

    /// Whether the song played to its end (`play --wait` exits 0 only then).
    public var playedToEnd: Bool {
        if case .finished = self { return true }
        return false
    }

    /// The line `play --wait` prints at the end.
    public func sentence(for file: String) -> String {
        switch self {
        case .finished: "\(file) finished"
        case let .stopped(status):
            "\(file) was stopped" + (status.playback.positionSeconds.map { " at \(formatClock($0))" } ?? "")
        case let .replaced(other, _): "\(file) was replaced by \(other)"
        }
    }
}
