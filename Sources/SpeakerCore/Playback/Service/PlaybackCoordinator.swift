import AsyncSignals
import DequeModule
import Logging
import MIDI
import Playback
import Readiness
import SpeakerdAPI

/// The daemon's playback service: what the D-Bus API calls for play, stop, pause, resume and
/// status.
///
/// It puts the readiness gate in front of the engine. A song is read and validated from the
/// client's descriptor first (a broken file fails at once, whatever the speaker is doing), then
/// waits for `.playbackReady` at most `playTimeout` (on the gate's clock), then starts; `play`
/// returns once its first audio is produced, or once it is queued. When the gate drops below
/// `.playbackReady` mid-song (speaker lost) the song pauses and resumes by itself when the gate
/// rises again, or stops, per `on_speaker_lost`.
///
/// Every song gets its own engine from ``PlaybackComponents`` (see there why). The lifecycle is
/// one explicit `State`; each public method switches on it, and after every suspension the code
/// checks that the song it was working on is still the current one (a newer request may have
/// replaced it meanwhile: actors are re-entrant).
public actor PlaybackCoordinator {
    /// A validated song that has not started yet; `ticket` identifies its request.
    struct PendingSong: Sendable {
        let ticket: Int
        let song: MIDISong
        let file: String
    }

    /// The song that owns the engine.
    struct CurrentSong: Sendable {
        let ticket: Int
        let file: String
        let durationSeconds: Double
        let engine: PlaybackEngine
        /// Forwards the engine's progress, end and failure to the coordinator.
        let engineEvents: Task<Void, Never>
    }

    enum State {
        case idle
        /// Parked in the readiness gate; `waiter` is cancelled if the song is replaced or stopped.
        case waiting(PendingSong, waiter: Task<Void, any Error>)
        /// Claimed and past the gate: output and engine are being built (`engine`, `task` once
        /// they exist; both are stopped if the song is replaced meanwhile).
        case starting(PendingSong, engine: PlaybackEngine?, task: Task<Void, any Error>?)
        case playing(CurrentSong)
        case paused(CurrentSong, PlaybackPauseReason)
        /// The last song was stopped early, at `position`.
        case stopped(file: String, position: Double, duration: Double)
        /// The last song's output failed mid-song, at `position`; `reason` is one line.
        case failed(file: String, reason: String, position: Double, duration: Double)
        /// `shutdown()` ran: no more songs.
        case shutDown
    }

    let gate: ReadinessGate<DaemonReadiness>
    let settings: PlaybackServiceSettings
    let components: PlaybackComponents
    let waitingFor: @Sendable () async -> String
    /// The speaker songs play on ("JBL Flip 5 (11:22:…)"), for the log's end and failure lines.
    let speaker: @Sendable () -> String?
    let logger: Logger
    /// Times the reading of a client's song (`settings.readTimeout`).
    let clock: any Clock<Duration>

    var state: State = .idle
    var queue: Deque<PendingSong> = []
    var nextTicket = 0
    /// The newest request that replaces (not queues): an older one still on its way gives up.
    var latestReplacingTicket = -1
    /// Why a request ended before its song started; its `play` call reads and removes it.
    var abandoned: [Int: PlaybackServiceError] = [:]
    /// The position last learnt from the engine (progress events, pause, status).
    var lastPosition: Double = 0
    let changeFeed = Broadcaster<PlaybackChange>()
    var speakerWatcher: Task<Void, Never>?
    /// The idle speaker's keep-alive signal (`settings.keepAlive`); nil when it is off.
    var keepAlive: IdleKeepAlive?

    /// - Parameters:
    ///   - gate: the daemon's readiness gate; songs wait for `.playbackReady`, and a drop below it
    ///     while a song plays is a speaker loss.
    ///   - settings: play timeout and speaker-loss policy (`PlaybackServiceSettings(configuration)`).
    ///   - components: builds each song's output and engine.
    ///   - waitingFor: what the daemon is still doing, for the timeout message ("connecting to
    ///     JBL Flip 5"); asked only when a request times out.
    ///   - clock: times the reading of each client's song (the gate keeps its own clock).
    ///   - speaker: names the speaker songs play on, for the log (nil: none, or not known here).
    public init(
        gate: ReadinessGate<DaemonReadiness>,
        settings: PlaybackServiceSettings = PlaybackServiceSettings(),
        components: PlaybackComponents,
        waitingFor: @escaping @Sendable () async -> String,
        clock: any Clock<Duration> = ContinuousClock(),
        speaker: @escaping @Sendable () -> String? = { nil },
        logger: Logger = Logger(label: "speakerd.playback")
    ) {
        self.clock = clock
        self.gate = gate
        self.settings = settings
        self.components = components
        self.waitingFor = waitingFor
        self.speaker = speaker
        self.logger = logger
        if settings.keepAlive {
            keepAlive = IdleKeepAlive(makeOutput: components.makeOutput, logger: logger)
        }
    }

    deinit {
        speakerWatcher?.cancel()
        changeFeed.finish()
    }

    // MARK: - Requests

    /// Reads the song from the client's descriptor (closing it), validates it, then plays it:
    /// replacing the current song, or appended to the queue with `request.queue` when something
    /// is playing or waiting. Returns the status once the song has started (or been queued).
    ///
    /// Throws ``PlaybackServiceError/invalidSong(file:reason:)`` at once for a broken file,
    /// `.notReady` when the speaker is not ready within the play timeout, and `.replaced` /
    /// `.stoppedBeforeStart` when a newer request or `stop` takes its place while it waits.
    ///
    /// `blocker` is asked, once the song is read and only if it would wait for readiness, why
    /// waiting cannot succeed; a sentence fails the request at once with `.cannotWait`.
    public nonisolated func play(_ request: PlayRequest,
                                 blocker: @Sendable () async -> String? = { nil }) async throws(PlaybackServiceError) -> PlaybackServiceStatus {
        let song = try await ClientSongReader.read(request, limits: settings.readLimits, timeout: settings.readTimeout,
                                                   clock: clock)
        if !gate.isReached(.playbackReady), let reason = await blocker() {
            throw .cannotWait(file: request.displayName, reason: reason)
        }
        return try await play(song, named: request.displayName, queue: request.queue)
    }

    /// Plays an already read song (in-process callers and `play(_: PlayRequest)`).
    public func play(_ song: MIDISong, named file: String, queue wantsQueue: Bool = false) async throws(PlaybackServiceError) -> PlaybackServiceStatus {
        if case .shutDown = state { throw .shuttingDown }
        watchSpeakerIfNeeded()
        let item = PendingSong(ticket: nextTicket, song: song, file: file)
        nextTicket += 1
        if wantsQueue, currentTicket != nil {
            queue.append(item)
            publish(.queued(file: file, position: queue.count))
            return snapshot()
        }
        latestReplacingTicket = item.ticket
        repeat {
            await endCurrentSong(abandoningWith: { .replaced(file: $0, by: file) }, reportAsStopped: true)
            // A newer play arrived while the old song was being stopped: it wins.
            guard latestReplacingTicket == item.ticket else {
                throw abandoned.removeValue(forKey: item.ticket) ?? .replaced(file: file, by: "a newer request")
            }
        } while currentTicket != nil
        if case .shutDown = state { throw .shuttingDown }
        state = .starting(item, engine: nil, task: nil)
        try await start(item, timeout: settings.playTimeout)
        return await status()
    }

    /// Stops the current song (or the one waiting to start) and empties the queue.
    @discardableResult
    public func stop() async -> PlaybackServiceStatus {
        await endCurrentSong(abandoningWith: { .stoppedBeforeStart(file: $0) }, reportAsStopped: true)
        await updateKeepAlive()
        return snapshot()
    }

    /// Fails the song waiting for readiness (and the queue behind it) with `reason`: the daemon
    /// knows waiting can no longer succeed, so the client hears why now, not at its timeout.
    public func abandonWaiting(because reason: String) async {
        guard case let .waiting(item, _) = state else { return }
        let failure = PlaybackServiceError.cannotWait(file: item.file, reason: reason)
        _ = await endCurrentSong(abandoningWith: { _ in failure }, reportAsStopped: false)
        publish(.failed(file: item.file, reason: failure.description))
    }

    /// Pauses the current song; it stays paused until `resume`, even if the speaker drops and
    /// comes back meanwhile.
    @discardableResult
    public func pause() async throws(PlaybackServiceError) -> PlaybackServiceStatus {
        switch state {
        case let .playing(current):
            state = .paused(current, .user)
            try? await current.engine.pause()
            await notePosition(of: current)
            publish(.paused(reason: .user))
        case let .paused(current, .speakerLost):
            state = .paused(current, .user)
            publish(.paused(reason: .user))
        case .paused(_, .user):
            break
        case let .waiting(item, _), let .starting(item, _, _):
            throw .notStartedYet(operation: "pause", file: item.file)
        case .idle, .stopped, .failed, .shutDown:
            throw .nothingPlaying(operation: "pause")
        }
        return snapshot()
    }

    /// Resumes a paused song where it paused. While the speaker is away the song is marked to
    /// resume as soon as it is back (the status says paused, reason `speakerLost`).
    @discardableResult
    public func resume() async throws(PlaybackServiceError) -> PlaybackServiceStatus {
        switch state {
        case let .paused(current, _):
            if gate.isReached(.playbackReady) {
                state = .playing(current)
                publish(.resumed)
                try? await current.engine.resume()
            } else {
                state = .paused(current, .speakerLost)
                publish(.paused(reason: .speakerLost))
            }
        case .playing, .waiting, .starting:
            break
        case .idle, .stopped, .failed, .shutDown:
            throw .nothingPlaying(operation: "resume")
        }
        return snapshot()
    }

    // MARK: - Observing

    /// The current status, with the position asked of the engine now.
    public func status() async -> PlaybackServiceStatus {
        switch state {
        case let .playing(current), let .paused(current, _):
            await notePosition(of: current)
        default:
            break
        }
        return snapshot()
    }

    /// The current status as the first element, then every change in order; the stream ends
    /// when the consumer stops iterating or the service shuts down.
    public func changes() -> AsyncStream<PlaybackChange> {
        changeFeed.subscribe(startingWith: PlaybackChange(event: .current, status: snapshot()))
    }

    // MARK: - Shared helpers

    /// The ticket of the song that is waiting, starting, playing or paused.
    var currentTicket: Int? {
        switch state {
        case let .waiting(item, _), let .starting(item, _, _): item.ticket
        case let .playing(current), let .paused(current, _): current.ticket
        case .idle, .stopped, .failed, .shutDown: nil
        }
    }

    func snapshot() -> PlaybackServiceStatus {
        let queued = queue.map(\.file)
        switch state {
        case .idle, .shutDown:
            return PlaybackServiceStatus(activity: .idle, queued: queued)
        case let .waiting(item, _), let .starting(item, _, _):
            return PlaybackServiceStatus(activity: .waiting, file: item.file, positionSeconds: 0,
                                  durationSeconds: item.song.durationSeconds, queued: queued)
        case let .playing(current):
            return PlaybackServiceStatus(activity: .playing, file: current.file, positionSeconds: lastPosition,
                                  durationSeconds: current.durationSeconds, queued: queued)
        case let .paused(current, reason):
            return PlaybackServiceStatus(activity: .paused, file: current.file, positionSeconds: lastPosition,
                                  durationSeconds: current.durationSeconds, pauseReason: reason, queued: queued)
        case let .stopped(file, position, duration):
            return PlaybackServiceStatus(activity: .stopped, file: file, positionSeconds: position,
                                  durationSeconds: duration, queued: queued)
        case let .failed(file, reason, position, duration):
            return PlaybackServiceStatus(activity: .failed, file: file, positionSeconds: position,
                                  durationSeconds: duration, queued: queued, error: reason)
        }
    }

    func publish(_ event: PlaybackChange.Event) {
        changeFeed.publish(PlaybackChange(event: event, status: snapshot()))
    }

    /// Refreshes `lastPosition` from the engine, unless another song took over meanwhile.
    func notePosition(of current: CurrentSong) async {
        let position = await current.engine.positionSeconds
        if currentTicket == current.ticket { lastPosition = position }
    }
}
