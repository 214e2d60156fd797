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

/// speakerd's player, behind the daemon's playback port (`DaemonPlayback`) with nothing in
/// between: it runs ``PlayerCore``, which decides the queue and the play/pause/stop states, and
/// carries out its effects.
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
/// (`routeChanged(to:route:)`): the player follows no audio path itself. The handles of each
/// song's work (its gate wait, its start, its session) are kept here by the song's ticket; the
/// core says what to do with them, and tells a result for a song no longer current from one
/// that counts.
public actor Player: DaemonPlayback {
    public typealias PendingSong = PlayerCore.PendingSong

    let gate: ReadinessGate<DaemonReadiness>
    let settings: PlaybackServiceSettings
    let components: PlaybackComponents
    let soundFonts: SoundFontCache
    let logger: Logger
    /// Times the reading of a client's song (`settings.readTimeout`).
    let clock: any Clock<Duration>
    /// The bytes held by songs being read from clients (`settings.readBudget`).
    public nonisolated let readBudget: SongReadBudget

    var core: PlayerCore
    let changeFeed = Broadcaster<PlaybackSnapshot>()
    var speakerWatcher: Task<Void, Never>?
    /// The idle speaker's keep-alive signal (`settings.keepAlive`); nil when it is off.
    var keepAlive: IdleKeepAlive?
    /// The gate wait of the song waiting to start, by ticket.
    var waits: [Int: Task<Void, any Error>] = [:]
    /// The start of the song being started: its session once built and its first render.
    var starts: [Int: (session: PlaybackSession, task: Task<Void, any Error>)] = [:]
    /// The session of each started song, with the task forwarding its events.
    var sessions: [Int: (session: PlaybackSession, events: Task<Void, Never>)] = [:]

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
        core = PlayerCore(settings: settings)
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
    public func routeChanged(to speaker: TargetSpeaker?, route: AudioRoute?) async {
        await run(.route(speaker, route))
    }

    /// A song waiting when waiting can no longer succeed (the user disconnected, the soundfont is
    /// gone…) fails now with the reason, instead of at its timeout; a song plays, pauses or
    /// resumes with the speaker.
    public func readinessChanged(_ waiting: PlaybackWait?) async {
        await run(.readiness(waiting))
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
        if request.queue, let reason = core.queueRefusal(for: request.displayName, memory: nil) {
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
        watchSpeakerIfNeeded()
        let memory = arrangement.isIdentity ? song.memoryFootprint
            : (written.map { $0.memoryFootprint + song.memoryFootprint(besides: $0) } ?? song.memoryFootprint)
        let item = PendingSong(ticket: core.takeTicket(), arranged: arranged, file: file, memory: memory,
                               written: arrangement.isIdentity ? song : (written ?? song), arrangement: arrangement)
        // The song it replaces has stopped before this one starts, so the next song never finds
        // the SoundFont's synthesiser still taken.
        var awaited: (song: PendingSong, timeout: Duration?)?
        for effect in core.step(.play(item, queue: wantsQueue), ready: gate.isReached(.playbackReady)) {
            switch effect {
            case let .refuse(error): throw error
            case let .start(song, timeout, true): awaited = (song, timeout)
            default: await perform(effect)
            }
        }
        guard let awaited else { return core.current }
        try await start(awaited.song, timeout: awaited.timeout)
        return await snapshot()
    }

    /// Ends the current song, where it is, and starts the next queued one, which plays as it
    /// would have after the current one's end; with nothing queued, the song just stops.
    public func skip() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        if let refusal = await run(.skip) { throw refusal }
        return core.current
    }

    /// Empties the queue; the current song plays on.
    @discardableResult
    public func clearQueue() async -> PlaybackSnapshot {
        await run(.clearQueue)
        return core.current
    }

    /// Stops the current song (or the one waiting to start) and empties the queue.
    @discardableResult
    public func stop() async -> PlaybackSnapshot {
        await run(.stop)
        return core.current
    }

    /// Pauses the current song; it stays paused until `resume`, even if the speaker drops and
    /// comes back meanwhile.
    @discardableResult
    public func pause() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        if let refusal = await run(.pause) { throw refusal }
        return core.current
    }

    /// Resumes a paused song where it paused. While the speaker is away the song is marked to
    /// resume as soon as it is back (the status says paused, reason `speakerLost`).
    @discardableResult
    public func resume() async throws(PlaybackServiceError) -> PlaybackSnapshot {
        if let refusal = await run(.resume) { throw refusal }
        return core.current
    }

    // MARK: - Observing

    /// The current snapshot, with the heard position asked of the session now.
    public func snapshot() async -> PlaybackSnapshot {
        if let song = core.playingSong, let session = sessions[song.ticket]?.session {
            let heard = await session.heardPositionSeconds
            await run(.position(ticket: song.ticket, seconds: heard))
        }
        return core.current
    }

    /// The current snapshot as the first element, then every change in order; the stream ends
    /// when the consumer stops iterating or the service shuts down.
    public func changes() -> AsyncStream<PlaybackSnapshot> {
        changeFeed.subscribe(startingWith: core.current)
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
        if let refusal = core.controlRefusal(control.name) { throw refusal }
        guard let song = core.playingSong, let session = sessions[song.ticket]?.session else {
            throw .nothingPlaying(operation: control.name)
        }
        let timeline = await session.positionSeconds
        let (arranged, arrangement, here) = try core.arranging(control, on: song, at: timeline, restrikingHeldNotes: restrikingHeldNotes)
        // Another song may have taken over while the position was asked for.
        guard core.playingSong?.ticket == song.ticket, await session.replaceSong(with: arranged) else {
            throw .nothingPlaying(operation: control.name)
        }
        await run(.adjusted(ticket: song.ticket, arrangement, at: here, said: restrikingHeldNotes ? nil : "\(control)"))
        return core.current
    }
}
