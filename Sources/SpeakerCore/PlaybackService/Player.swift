import AsyncSignals
import AudioPath
import BlueZ
import DBus
import DequeModule
import Logging
import MIDI
import Playback
import Readiness
import ServiceLifecycle
import SpeakerdAPI
import SystemPackage

/// speakerd's player: the queue and the play/pause/stop state machine, behind the daemon's
/// playback port (`DaemonPlayback`) with nothing in between.
///
/// It puts the readiness gate in front of the session. A song is read and validated from the
/// client's descriptor first (a broken file fails at once, whatever the speaker is doing), then
/// waits for `.playbackReady` at most `playTimeout` (on the gate's clock), then starts; `play`
/// returns once its first audio is produced, or once it is queued. When the gate drops below
/// `.playbackReady` mid-song (speaker lost) the song pauses and resumes by itself when the gate
/// rises again, or stops, per `on_speaker_lost`.
///
/// Every song gets its own session (one song's render session) from ``PlaybackComponents`` (see
/// there why), with the output opened on the route the daemon last handed over
/// (`routeChanged(to:route:)`): the player follows no audio path itself. The lifecycle is one
/// explicit `State`; each public method switches on it, and after every suspension the code
/// checks that the song it was working on is still the current one (a newer request may have
/// replaced it meanwhile: actors are re-entrant).
public actor Player: DaemonPlayback {
    /// A validated song that has not started yet; `ticket` identifies its request.
    struct PendingSong: Sendable {
        let ticket: Int
        /// The song as it plays: arranged by the composer's controls at `play`, if any, with its
        /// section loop's seams and, for a loop until `loop off`, the pass that repeats.
        let arranged: ArrangedSong
        let file: String
        /// What the parsed song takes in memory (`MIDISong.memoryFootprint`; when it is arranged,
        /// the written song and what the arrangement adds to it: an arrangement of a song read
        /// from a file shares its events), for the queue's limit.
        let memory: Int
        /// The song as written, which the live controls arrange again from where it is.
        let written: MIDISong
        /// The controls `song` was arranged with.
        let arrangement: SongArrangement

        var song: MIDISong { arranged.song }
    }

    /// The song that owns the session.
    struct CurrentSong: Sendable {
        let ticket: Int
        let file: String
        var durationSeconds: Double
        let session: PlaybackSession
        /// The song as written, and the controls it plays with now (`adjust`).
        let written: MIDISong
        var arrangement: SongArrangement
        /// Bar and beat at `position` (as the status tells it: the written song's seconds, whatever
        /// the song was started or is played with).
        func musicalPosition(at position: Double) -> StatusReport.MusicalPosition? {
            guard let bars = written.bars, bars.barCount > 0 else { return nil }
            let seconds = min(position, written.durationSeconds)
            let place = bars.position(atSeconds: seconds)
            return StatusReport.MusicalPosition(bar: min(place.bar, bars.barCount), beat: place.bar > bars.barCount ? 1 : place.beat,
                                                bars: bars.barCount,
                                                bpm: arrangement.heardQuarterNotesPerMinute(of: written, atSeconds: seconds))
        }

        /// A position on the session's timeline as the status tells it: in the written song's
        /// seconds, so a song's bars and beats are the same whether its tempo, start or loop came
        /// with `play` or live (the session's timeline starts again at each live control).
        func songPosition(_ timeline: Double) -> Double {
            arrangement.songSeconds(atArranged: timeline, in: written)
        }
        /// Forwards the session's progress, end and failure to the player.
        let sessionEvents: Task<Void, Never>
        /// The speaker went away while the song was paused by the user, so its output may be
        /// gone with the speaker's sink: resuming opens the speaker's output again first.
        var outputMayBeGone = false

        /// The same song, marked as having lost its speaker while paused.
        var speakerLeft: CurrentSong {
            var song = self
            song.outputMayBeGone = true
            return song
        }
    }

    enum State {
        case idle
        /// Parked in the readiness gate; `waiter` is cancelled if the song is replaced or stopped.
        case waiting(PendingSong, waiter: Task<Void, any Error>)
        /// Claimed and past the gate: output and session are being built (`session`, `task` once
        /// they exist; both are stopped if the song is replaced meanwhile).
        case starting(PendingSong, session: PlaybackSession?, task: Task<Void, any Error>?)
        case playing(CurrentSong)
        case paused(CurrentSong, PlaybackSnapshot.PauseReason)
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
    let soundFonts: SoundFontCache
    let logger: Logger
    /// Times the reading of a client's song (`settings.readTimeout`).
    let clock: any Clock<Duration>
    /// The bytes held by songs being read from clients (`settings.readBudget`).
    public nonisolated let readBudget: SongReadBudget

    var state: State = .idle
    var queue: Deque<PendingSong> = []
    var nextTicket = 0
    /// The newest request that replaces (not queues): an older one still on its way gives up.
    var latestReplacingTicket = -1
    /// Why a request ended before its song started; its `play` call reads and removes it.
    var abandoned: [Int: PlaybackServiceError] = [:]
    /// The position last learnt from the session (progress events, pause, status).
    var lastPosition: Double = 0
    /// The current song's output latency as its last progress report found it (status shows it).
    var lastLatency: Double?
    /// The speaker songs play to, and the route to it while its audio path is ready, as the
    /// daemon last said (`routeChanged(to:route:)`).
    var speaker: TargetSpeaker?
    var route: AudioRoute?
    /// What the daemon waits for before songs can play, as it last said (`readinessChanged`).
    var waiting: PlaybackWait?
    let changeFeed = Broadcaster<PlaybackSnapshot>()
    var speakerWatcher: Task<Void, Never>?
    /// The idle speaker's keep-alive signal (`settings.keepAlive`); nil when it is off.
    var keepAlive: IdleKeepAlive?

    /// - Parameters:
    ///   - gate: the daemon's readiness gate; songs wait for `.playbackReady`, and a drop below it
    ///     while a song plays is a speaker loss.
    ///   - settings: play timeout and speaker-loss policy (`PlaybackServiceSettings(configuration)`).
    ///   - components: builds each song's output and session.
    ///   - soundFonts: the soundfont songs share (the start-up step preloads it).
    ///   - clock: times the reading of each client's song (the gate keeps its own clock).
    public init(
        gate: ReadinessGate<DaemonReadiness>,
        settings: PlaybackServiceSettings = PlaybackServiceSettings(),
        components: PlaybackComponents,
        soundFonts: SoundFontCache = SoundFontCache(),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "speakerd.playback")
    ) {
        self.clock = clock
        self.readBudget = SongReadBudget(limits: settings.readBudget)
        self.gate = gate
        self.settings = settings
        self.components = components
        self.soundFonts = soundFonts
        self.logger = logger
        if settings.keepAlive {
            keepAlive = IdleKeepAlive(makeOutput: components.makeOutput, sound: settings.keepAliveSound, logger: logger)
        }
    }

    deinit {
        speakerWatcher?.cancel()
        changeFeed.finish()
    }

    // MARK: - What the daemon tells the player

    public func preloadSoundfont(_ path: String) async throws {
        _ = try await soundFonts.load(path: path)
    }

    /// Songs from now on play to `speaker`, on `route` while its path is ready.
    public func routeChanged(to speaker: TargetSpeaker?, route: AudioRoute?) {
        self.speaker = speaker
        self.route = route
    }

    /// A song waiting when waiting can no longer succeed (the user disconnected, the soundfont is
    /// gone…) fails now with the reason, instead of at its timeout; a song plays, pauses or
    /// resumes with the speaker.
    public func readinessChanged(_ waiting: PlaybackWait?) async {
        let before = self.waiting
        self.waiting = waiting
        if let waiting, !waiting.waitingCanSucceed, waiting != before {
            await abandonWaiting(because: waiting.message)
        }
        await reconcileWithSpeaker()
    }

    public nonisolated var lifecycleService: (any Service)? { self }

    // MARK: - Requests

    /// Reads the song from the client's descriptor (closing it), validates it, then plays it:
    /// replacing the current song, or appended to the queue with `request.queue` when something
    /// is playing or waiting. Returns the snapshot once the song has started (or been queued).
    ///
    /// Throws ``PlaybackServiceError/invalidSong(file:reason:)`` at once for a broken file,
    /// `.cannotWait` at once when the song would wait and the daemon said waiting cannot succeed,
    /// `.notReady` when the speaker is not ready within the play timeout, and `.replaced` /
    /// `.stoppedBeforeStart` when a newer request or `stop` takes its place while it waits.
    ///
    /// Throws `.busy` at once when the song would pass a memory bound: the budget for songs being
    /// read (`SongReadBudget`), or the queue's limits (`PlayQueueLimits`, judged before reading
    /// when the queue is already full, and again once the song is parsed).
    public func play(_ request: PlayRequest) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        if request.queue, currentTicket != nil, let reason = queueRefusal(for: request.displayName, memory: nil) {
            try? request.file.close()
            throw .busy(file: request.displayName, reason: reason)
        }
        let written = try await ClientSongReader.read(request, limits: settings.readLimits, timeout: settings.readTimeout,
                                                      clock: clock, budget: readBudget)
        var arrangement = SongArrangement()
        var arranged = ArrangedSong(song: written)
        if !request.arrangement.isEmpty {
            // The composer's controls, checked again (any client may send them) and applied
            // under the reader's limits: a loop of a thousand passes is bounded like a long file.
            do {
                arrangement = try request.arrangement.arrangement()
                // `play --loop A-B` without a count: the pass repeats until `loop off`.
                arranged = try arrangement.arranged(written, limits: settings.readLimits)
            } catch let error as ArrangementTextError {
                throw .invalidSong(file: request.displayName, reason: error.description)
            } catch {
                throw .invalidSong(file: request.displayName, reason: "\(error)")
            }
        }
        if !gate.isReached(.playbackReady), let waiting, !waiting.waitingCanSucceed {
            throw .cannotWait(file: request.displayName, reason: waiting.message)
        }
        return try await play(arranged, named: request.displayName, queue: request.queue, written: written, arrangement: arrangement)
    }

    public func play(file: FileDescriptor, displayName: String, queue: Bool) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try await play(PlayRequest(file: file, displayName: displayName, queue: queue))
    }

    /// Plays an already read song, as written (in-process callers).
    public func play(_ song: MIDISong, named file: String, queue wantsQueue: Bool = false) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try await play(ArrangedSong(song: song), named: file, queue: wantsQueue)
    }

    /// Plays an already read song as `arrangement` (the composer's controls) laid `written` out.
    func play(_ arranged: ArrangedSong, named file: String, queue wantsQueue: Bool = false,
              written: MIDISong? = nil, arrangement: SongArrangement = SongArrangement()) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        let song = arranged.song
        if case .shutDown = state { throw .shuttingDown }
        watchSpeakerIfNeeded()
        let memory = arrangement.isIdentity ? song.memoryFootprint
            : (written.map { $0.memoryFootprint + song.memoryFootprint(besides: $0) } ?? song.memoryFootprint)
        if wantsQueue, currentTicket != nil, let reason = queueRefusal(for: file, memory: memory) {
            throw .busy(file: file, reason: reason)
        }
        let item = PendingSong(ticket: nextTicket, arranged: arranged, file: file, memory: memory,
                               written: arrangement.isIdentity ? song : (written ?? song), arrangement: arrangement)
        nextTicket += 1
        if wantsQueue, currentTicket != nil {
            queue.append(item)
            logger.info("queued \(file)\(onSpeaker) (\(queue.count) waiting)")
            publish()
            return current
        }
        latestReplacingTicket = item.ticket
        repeat {
            logEnded(await endCurrentSong(abandoningWith: { .replaced(file: $0, by: file) }, reportAsStopped: true),
                     "replaced by \(file)")
            // A newer play arrived while the old song was being stopped: it wins.
            guard latestReplacingTicket == item.ticket else {
                throw abandoned.removeValue(forKey: item.ticket) ?? .replaced(file: file, by: "a newer request")
            }
        } while currentTicket != nil
        if case .shutDown = state { throw .shuttingDown }
        state = .starting(item, session: nil, task: nil)
        try await start(item, timeout: settings.playTimeout)
        return await snapshot()
    }

    /// Ends the current song, where it is, and starts the next queued one, which plays as it
    /// would have after the current one's end; with nothing queued, the song just stops.
    public func skip() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        guard currentTicket != nil else { throw .nothingPlaying(operation: "skip") }
        let next = queue
        let ended = await endCurrentSong(abandoningWith: { .replaced(file: $0, by: "the next song (skip)") },
                                         reportAsStopped: next.isEmpty)
        logEnded(ended, next.first.map { "skipped for \($0.file)" } ?? "skipped; nothing was queued")
        // Songs queued while the current one was being stopped go after those already waiting.
        queue.insert(contentsOf: next, at: 0)
        startNextQueuedSong()
        publish()
        await updateKeepAlive()
        return current
    }

    /// Empties the queue; the current song plays on.
    @discardableResult
    public func clearQueue() async -> PlaybackSnapshot {
        guard !queue.isEmpty else { return current }
        logger.info("cleared the queue (\(queue.count) song\(queue.count == 1 ? "" : "s"))")
        queue.removeAll()
        publish()
        return current
    }

    /// Stops the current song (or the one waiting to start) and empties the queue.
    @discardableResult
    public func stop() async -> PlaybackSnapshot {
        logEnded(await endCurrentSong(abandoningWith: { .stoppedBeforeStart(file: $0) }, reportAsStopped: true), "stopped")
        await updateKeepAlive()
        return current
    }

    /// Fails the song waiting for readiness (and the queue behind it) with `reason`: the daemon
    /// knows waiting can no longer succeed, so the client hears why now, not at its timeout.
    func abandonWaiting(because reason: String) async {
        guard case let .waiting(item, _) = state else { return }
        let failure = PlaybackServiceError.cannotWait(file: item.file, reason: reason)
        _ = await endCurrentSong(abandoningWith: { _ in failure }, reportAsStopped: false)
        publish()
    }

    /// Pauses the current song; it stays paused until `resume`, even if the speaker drops and
    /// comes back meanwhile.
    @discardableResult
    public func pause() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        switch state {
        case let .playing(current):
            state = .paused(current, .user)
            try? await current.session.pause()
            await notePosition(of: current, playedOut: true)
            logger.info("paused \(current.file)\(onSpeaker) at \(Self.loggedSeconds(lastPosition))")
            publish()
        case let .paused(current, .speakerLost):
            state = .paused(current.speakerLeft, .user)
            logger.info("paused \(current.file)\(onSpeaker) as asked; it stays paused when the speaker is back")
            publish()
        case .paused(_, .user):
            break
        case let .waiting(item, _), let .starting(item, _, _):
            throw .notStartedYet(operation: "pause", file: item.file)
        case .idle, .stopped, .failed, .shutDown:
            throw .nothingPlaying(operation: "pause")
        }
        return current
    }

    /// Resumes a paused song where it paused. While the speaker is away the song is marked to
    /// resume as soon as it is back (the status says paused, reason `speakerLost`).
    @discardableResult
    public func resume() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        switch state {
        case .paused(var current, _):
            if gate.isReached(.playbackReady) {
                let reopen = current.outputMayBeGone
                current.outputMayBeGone = false
                state = .playing(current)
                logger.info("resumed \(current.file)\(onSpeaker) at \(Self.loggedSeconds(lastPosition))")
                publish()
                if reopen { await reopenOutput(of: current, after: "resumed") }
                // A pause or stop that came while the output was opened again has the last word.
                guard case let .playing(now) = state, now.ticket == current.ticket else { return self.current }
                try? await current.session.resume()
            } else {
                state = .paused(current, .speakerLost)
                logger.info("\(current.file) resumes when the speaker is back")
                publish()
            }
        case .playing, .waiting, .starting:
            break
        case .idle, .stopped, .failed, .shutDown:
            throw .nothingPlaying(operation: "resume")
        }
        return current
    }

    // MARK: - Observing

    /// The current snapshot, with the position asked of the session now.
    public func snapshot() async -> PlaybackSnapshot {
        switch state {
        case let .playing(current), let .paused(current, _):
            await notePosition(of: current, playedOut: false)
        default:
            break
        }
        return current
    }

    /// The current snapshot as the first element, then every change in order; the stream ends
    /// when the consumer stops iterating or the service shuts down.
    public func changes() -> AsyncStream<PlaybackSnapshot> {
        changeFeed.subscribe(startingWith: current)
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

    /// Why a song taking `memory` bytes (nil: not read yet) may not join the queue now, if it may not.
    func queueRefusal(for file: String, memory: Int?) -> String? {
        settings.queueLimits.refusal(file: file, count: queue.count, held: queue.reduce(0) { $0 + $1.memory }, adding: memory)
    }

    /// The snapshot as of now, with the position last learnt.
    var current: PlaybackSnapshot {
        let queued = queue.map { StatusReport.QueuedSong(file: $0.file, durationSeconds: $0.song.durationSeconds) }
        switch state {
        case .idle, .shutDown:
            return PlaybackSnapshot(activity: .idle, queued: queued)
        case let .waiting(item, _), let .starting(item, _, _):
            return PlaybackSnapshot(activity: .waiting, file: item.file, positionSeconds: 0,
                                durationSeconds: item.song.durationSeconds, queued: queued)
        case let .playing(current):
            var snapshot = PlaybackSnapshot(activity: .playing, file: current.file, positionSeconds: lastPosition,
                                            durationSeconds: current.durationSeconds, queued: queued)
            snapshot.controls = current.arrangement.controls
            snapshot.musicalPosition = current.musicalPosition(at: lastPosition)
            snapshot.latencySeconds = lastLatency
            return snapshot
        case let .paused(current, reason):
            var snapshot = PlaybackSnapshot(activity: .paused, file: current.file, positionSeconds: lastPosition,
                                            durationSeconds: current.durationSeconds, pauseReason: reason, queued: queued)
            snapshot.controls = current.arrangement.controls
            snapshot.musicalPosition = current.musicalPosition(at: lastPosition)
            return snapshot
        case let .stopped(file, position, duration):
            return PlaybackSnapshot(activity: .stopped, file: file, positionSeconds: position,
                                durationSeconds: duration, queued: queued)
        case let .failed(file, reason, position, duration):
            return PlaybackSnapshot(activity: .failed, file: file, positionSeconds: position,
                                durationSeconds: duration, queued: queued, error: reason)
        }
    }

    /// Tells the change stream's readers (the daemon's status and signal) the snapshot now.
    func publish() {
        changeFeed.publish(current)
    }

    /// Refreshes `lastPosition` from the session, unless another song took over meanwhile: for a
    /// pause the user asked for, where rendering paused (the device plays out what it holds, so
    /// that is where the listener stops); for a speaker lost, the heard position (what the
    /// device held went with it).
    func notePosition(of current: CurrentSong, playedOut: Bool) async {
        let position = playedOut ? await current.session.positionSeconds : await current.session.heardPositionSeconds
        if currentTicket == current.ticket, let now = playingSong { lastPosition = now.songPosition(position) }
    }

    /// The song playing or paused now, as the state holds it (with its latest arrangement).
    var playingSong: CurrentSong? {
        switch state {
        case let .playing(current), let .paused(current, _): current
        default: nil
        }
    }

    // MARK: - The composer's controls while a song plays

    /// Applies a live control (seek, loop, tempo, transpose, mute, solo, unmute) to the song
    /// playing or paused now: it goes on from where it is (a seek: from its target) with the new
    /// arrangement, from the render loop's next block. A control the song cannot take (no such
    /// bar or track, a tempo out of range) is refused in one line and changes nothing.
    public func adjust(_ control: LiveControl) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try await adjust(control, restrikingHeldNotes: false)
    }

    /// `adjust`; with `restrikingHeldNotes` the notes sounding where the song goes on are struck
    /// again there (`SongArrangement.restrikesHeldNotes`), for this one layout only.
    func adjust(_ control: LiveControl, restrikingHeldNotes: Bool) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        guard let song = playingSong else {
            if case let .waiting(item, _) = state { throw .notStartedYet(operation: control.name, file: item.file) }
            if case let .starting(item, _, _) = state { throw .notStartedYet(operation: control.name, file: item.file) }
            throw .nothingPlaying(operation: control.name)
        }
        // Where the song is, in the written song's seconds: a song played with controls (a tempo,
        // a count-in, a loop's passes) is elsewhere on its own timeline.
        let timeline = await song.session.positionSeconds
        let here = song.arrangement.songSeconds(atArranged: timeline, in: song.written)
        let arranged: ArrangedSong
        let arrangement: SongArrangement
        do {
            var applied = try control.applied(to: song.arrangement, at: here, in: song.written,
                                              passesLeft: song.arrangement.passesLeft(atArranged: timeline, in: song.written))
            applied.restrikesHeldNotes = restrikingHeldNotes
            arranged = try applied.arranged(song.written, limits: settings.readLimits)
            applied.restrikesHeldNotes = false
            arrangement = applied
        } catch {
            throw .controlRefused(operation: control.description, file: song.file, reason: error.description)
        }
        // Another song may have taken over while the position was asked for.
        guard var now = playingSong, now.ticket == song.ticket else { throw .nothingPlaying(operation: control.name) }
        guard await now.session.replaceSong(with: arranged) else { throw .nothingPlaying(operation: control.name) }
        now.arrangement = arrangement
        now.durationSeconds = song.written.durationSeconds
        switch state {
        case .playing: state = .playing(now)
        case let .paused(_, reason): state = .paused(now, reason)
        default: break
        }
        lastPosition = arrangement.songSeconds(atArranged: 0, in: song.written)
        if !restrikingHeldNotes { logger.info("\(control) for \(song.file) at \(Self.loggedSeconds(here))") }
        publish()
        return current
    }
}
