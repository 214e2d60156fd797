import AsyncSignals
import SpeakerdAPI
/// What `composer-cli play --wait` does after handing the song over: follows speakerd's status
/// until the song is over, reporting each status so a terminal can redraw its progress line.
///
/// It is woken by speakerd's PlaybackChanged signal when the client offers it (`wakeUps`), and
/// otherwise asks for the status every `pollInterval` (250 ms, no faster than 4 times a second).
/// Signals alone are not trusted to come: a speakerd that restarts while the bus stays up never
/// sends the song's end, so with signals it still asks every `fallbackPollInterval` (5 s), and
/// it notices a new process answering for speakerd (`daemonInstance`) as the song's loss.
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
        /// Its output failed mid-song (the speaker's device went away); `reason` is one line.
        case failed(reason: String, StatusReport)
        /// speakerd restarted meanwhile: the new process does not know the song.
        case daemonRestarted(StatusReport)
    }

    public static let minimumPollInterval: Duration = .milliseconds(250)
    /// How often the status is asked for even while signals are followed.
    public static let defaultFallbackPollInterval: Duration = .seconds(5)

    let control: any SpeakerdControl
    let clock: any Clock<Duration>
    let pollInterval: Duration
    let fallbackPollInterval: Duration
    let daemonInstance: (@Sendable () async -> String?)?

    /// - Parameter daemonInstance: which process answers for speakerd now (its unique bus name),
    ///   asked when a wait starts and with every status; a different answer means speakerd
    ///   restarted. nil when the control is not a bus client (an in-process daemon).
    public init(control: any SpeakerdControl, clock: any Clock<Duration> = ContinuousClock(),
                pollInterval: Duration = PlaybackWaiter.minimumPollInterval,
                fallbackPollInterval: Duration = PlaybackWaiter.defaultFallbackPollInterval,
                daemonInstance: (@Sendable () async -> String?)? = nil) {
        self.control = control
        self.daemonInstance = daemonInstance
        self.clock = clock
        self.pollInterval = max(pollInterval, Self.minimumPollInterval)
        self.fallbackPollInterval = max(fallbackPollInterval, Self.minimumPollInterval)
    }

    /// Waits until `file` is over; `onStatus` sees every status read meanwhile.
    ///
    /// - Parameters:
    ///   - wakeUps: one element per PlaybackChanged signal (and per change of speakerd's owner on
    ///     the bus), subscribed before the song was sent so none is missed; nil polls instead.
    public func wait(
        for file: String,
        wakeUps: AsyncStream<Void>? = nil,
        onStatus: (StatusReport) -> Void = { _ in }
    ) async throws -> Outcome {
        let instance = await daemonInstance?()
        let ticks = PlaybackWaiterTicks(signals: wakeUps, clock: clock, pollInterval: pollInterval,
                                        fallbackPollInterval: fallbackPollInterval)
        defer { ticks.cancel() }
        var iterator = ticks.wakeUps.makeAsyncIterator()
        var seen = false
        while true {
            // Who answers is asked before the status, so a restart's status is the new
            // process's own: asked after, a restart between the two would be reported with the
            // old process's view of a song still playing.
            let answering = await daemonInstance?()
            let status = try await control.status()
            onStatus(status)
            if let instance, let answering, answering != instance {
                return .daemonRestarted(status)
            }
            let playback = status.playback
            let active = ["waiting", "playing", "paused"].contains(playback.state)
            if playback.file == file, active {
                seen = true
            } else if !seen, playback.queue.contains(where: { $0.file == file }) {
                // Still queued (a playlist's later song): the songs before it play first.
            } else if !active {
                switch playback.state {
                case "stopped": return .stopped(status)
                case "failed" where playback.file == file: return .failed(reason: playback.error ?? "unknown error", status)
                default: return .finished(status)
                }
            } else if seen, let other = playback.file {
                return .replaced(by: other, status)
            }
            ticks.armNextTick()
            guard await iterator.next() != nil else { throw CancellationError() }
        }
    }
}

extension PlaybackWaiter.Outcome {
    /// The status speakerd answered last.
    public var status: StatusReport {
        switch self {
        case let .finished(status), let .stopped(status), let .replaced(_, status), let .failed(_, status),
             let .daemonRestarted(status): status
        }
    }

    /// Whether the song played to its end (`play --wait` exits 0 only then).
    public var playedToEnd: Bool {
        if case .finished = self { return true }
        return false
    }

    /// Whether `play --wait` exits 0: the song played to its end, or someone stopped it (`stop`
    /// is a wish fulfilled, not a failure). Replaced by another song, it exits 1.
    public var endedAsAsked: Bool {
        switch self {
        case .finished, .stopped: true
        case .replaced, .failed, .daemonRestarted: false
        }
    }

    /// Whether the song was lost to an error (its output failed, speakerd restarted) rather than
    /// ended by someone: `play --wait` reports those on stderr.
    public var isFailure: Bool {
        switch self {
        case .failed, .daemonRestarted: true
        case .finished, .stopped, .replaced: false
        }
    }

    /// The line `play --wait` prints at the end.
    public func sentence(for file: String) -> String {
        switch self {
        case .finished: "\(file) finished"
        case let .stopped(status):
            "\(file) was stopped" + (status.playback.positionSeconds.map { " at \(formatClock($0))" } ?? "")
        case let .replaced(other, _): "\(file) was replaced by \(other)"
        case let .failed(reason, _): "\(file) failed: \(reason)"
        case .daemonRestarted: "speakerd restarted while \(file) played; the song is no longer playing"
        }
    }
}

/// What `play --wait --json` prints once the song is over: which song, how it ended (the stable
/// word `outcome`: finished, stopped, replaced, failed, daemonRestarted), why it failed, and the
/// status as it started and as it ended, so a script learns in one record what `--wait` saw.
public struct PlayWaitReport: Encodable, Sendable {
    public var file: String
    public var outcome: String
    public var error: String?
    public var replacedBy: String?
    public var started: StatusReport
    public var ended: StatusReport

    enum CodingKeys: String, CodingKey { case file, outcome, error, replacedBy, started, ended }

    public init(file: String, outcome: PlaybackWaiter.Outcome, started: StatusReport) {
        self.file = file
        self.started = started
        ended = outcome.status
        switch outcome {
        case .finished: self.outcome = "finished"
        case .stopped: self.outcome = "stopped"
        case let .replaced(other, _): (self.outcome, replacedBy) = ("replaced", other)
        case let .failed(reason, _): (self.outcome, error) = ("failed", reason)
        case .daemonRestarted: (self.outcome, error) = ("daemonRestarted", outcome.sentence(for: file))
        }
    }

    /// Every key is always there (null when it does not apply), so scripts can rely on them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(file, forKey: .file)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(error, forKey: .error)
        try container.encode(replacedBy, forKey: .replacedBy)
        try container.encode(started, forKey: .started)
        try container.encode(ended, forKey: .ended)
    }
}
