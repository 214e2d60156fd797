import AsyncSignals
import MIDI
/// One song's render session: the song, through one loaded SoundFont, to an output (which may be
/// replaced mid-song when the speaker comes back).
///
/// The session owns the song's lifecycle: it turns start/pause/resume/stop into transitions of an
/// explicit `PlaybackState`, starts the output's render task, and reports what happens as
/// `PlaybackEvent`s. Audio itself flows between the output and a `PlaybackSource` without the
/// actor in the way, so a busy actor never causes an audible glitch.
///
/// One session plays one song: the next song gets a session of its own (with its own event
/// stream, so no event of a replaced song is mistaken for the next one's), and whoever keeps the
/// queue (the daemon's `Player`) decides which song plays. A start made while the SoundFont is
/// still loading waits for it (state `.loading`); the daemon adds its own readiness gate in front.
public actor PlaybackSession {
    /// How often `.progress` is reported while playing, on the engine's clock.
    public static let defaultProgressInterval: Duration = .milliseconds(500)

    /// Where songs go; replaceable mid-song (`replaceOutput(with:)`).
    public private(set) var output: any AudioOutput
    private let clock: any Clock<Duration>
    private let progressInterval: Duration
    /// Silence before each song's first note, and again whenever a new output takes a song up
    /// (see `PlaybackSource.init(song:soundFont:preRoll:)`).
    public let preRoll: Duration
    /// A paused song's device hears the keep-alive signal, not digital silence (`keep_alive`).
    public let keepAliveWhilePaused: Bool
    /// What that signal is (`keep_alive = yes`, `silence` or `tone`).
    public let keepAliveSound: KeepAliveSound
    /// A device that stops taking audio mid-song pauses the song (`.outputStopped`) instead of
    /// failing it, so that its owner can open the device again while the speaker is still there:
    /// a sound server's Bluetooth node can fail once and work on a new stream. Off, the song fails.
    public let holdsSongWhenOutputStops: Bool
    private let soundFontProvider: @Sendable () async throws -> SoundFont

    public private(set) var state: PlaybackState = .idle
    /// The song's title, once started.
    public private(set) var title: String?
    private var source: PlaybackSource?
    private var renderTask: Task<Void, Never>?
    private var progressTask: Task<Void, Never>?
    /// Bumped by stop, so a start or render task it superseded changes nothing.
    private var generation = 0
    /// Bumped when an output is detached mid-song, so its render task does not end the song.
    private var outputGeneration = 0
    /// The error that ended the song, while its state is `.failed`.
    private var lastFailure: (any Error)?
    /// The output's device died while the song was paused: `resume` opens the output again.
    private(set) var outputLost = false
    private let observers = Broadcaster<PlaybackEvent>(bufferingNewest: 256)

    /// - Parameters:
    ///   - soundFont: returns the loaded SoundFont; called on every play, so pass something that
    ///     loads once (the daemon's deferred load task) and answers at once afterwards.
    ///   - clock: drives progress events; inject a test clock in tests.
    ///   - preRoll: silence before the first note whenever a stream opens (`pre_roll_ms`); none
    ///     by default, so an engine writing a file renders exactly the song.
    ///   - keepAliveWhilePaused: play the keep-alive signal to a device while a song is paused, so
    ///     a long pause does not let the speaker power itself off (`keep_alive`).
    ///   - holdsSongWhenOutputStops: see the property of that name.
    public init(
        output: any AudioOutput,
        clock: any Clock<Duration> = ContinuousClock(),
        progressInterval: Duration = defaultProgressInterval,
        preRoll: Duration = .zero,
        keepAliveWhilePaused: Bool = false,
        keepAliveSound: KeepAliveSound = .bursts,
        holdsSongWhenOutputStops: Bool = false,
        soundFont: @escaping @Sendable () async throws -> SoundFont
    ) {
        self.output = output
        self.clock = clock
        self.progressInterval = progressInterval
        self.preRoll = preRoll
        self.keepAliveWhilePaused = keepAliveWhilePaused
        self.keepAliveSound = keepAliveSound
        self.holdsSongWhenOutputStops = holdsSongWhenOutputStops
        self.soundFontProvider = soundFont
    }

    /// A session over an already loaded SoundFont.
    public init(output: any AudioOutput, soundFont: SoundFont, clock: any Clock<Duration> = ContinuousClock(),
                progressInterval: Duration = defaultProgressInterval) {
        self.init(output: output, clock: clock, progressInterval: progressInterval, soundFont: { soundFont })
    }

    // MARK: - Observing

    /// A new stream of every event from now on; it ends when the consumer stops iterating.
    public func events() -> AsyncStream<PlaybackEvent> {
        observers.subscribe()
    }

    private func emit(_ event: PlaybackEvent) {
        observers.publish(event)
    }

    /// Seconds rendered of the song (capped at its duration); 0 before it started. Live controls
    /// act here, where rendering goes on.
    public var positionSeconds: Double { source?.positionSeconds ?? 0 }
    /// Seconds the listener has heard: `positionSeconds` less the output's latency. What the
    /// progress and stop events report, and what a person is told (pause and resume report
    /// `positionSeconds`: a pause is heard up to there once the device plays out what it holds).
    public var heardPositionSeconds: Double { source?.heardPositionSeconds ?? 0 }
    /// The output's latency as it last reported it; nil for a file or null output.
    public var outputLatencySeconds: Double? { source?.outputLatencySeconds }
    /// Gaps the outputs reported while the song played (a sound server's underflows).
    public var outputUnderflows: Int { source?.outputUnderflows ?? 0 }
    /// Rendered but unheard seconds: after the output died, what it never played.
    public var unheardSeconds: Double { source?.unheardSeconds ?? 0 }
    /// The song's duration from its tempo map; 0 before it started.
    public var durationSeconds: Double { source?.durationSeconds ?? 0 }

    // MARK: - Control

    /// A live control's new timeline for the song, taken up at the render loop's next block
    /// (`PlaybackSource.replaceSong`); false when no song plays in this session.
    public func replaceSong(with song: ArrangedSong) -> Bool {
        source?.replaceSong(with: song) ?? false
    }

    /// Starts `song`, the session's one song. Returns once the output renders its first block;
    /// throws (and reports `.failed`) if the SoundFont or the output cannot become ready, or the
    /// output fails before any audio (a device that cannot be opened). A session that has
    /// started already refuses (the next song needs a session of its own).
    public func start(_ song: MIDISong, title: String) async throws {
        try await start(ArrangedSong(song: song), title: title)
    }

    /// `start` for a song laid out for live play: a section loop repeats until a live control
    /// replaces the timeline (`SongArrangement.arrangeLive`).
    public func start(_ song: ArrangedSong, title: String) async throws {
        guard state == .idle else { throw PlaybackSessionError(operation: "start \(title)", state: state) }
        let myGeneration = generation
        state = .loading
        self.title = title
        let newSource: PlaybackSource
        do {
            let soundFont = try await soundFontProvider()
            try await output.waitUntilReady()
            try Task.checkCancellation()
            guard generation == myGeneration else { throw CancellationError() }
            newSource = try PlaybackSource(arranged: song, soundFont: soundFont, sampleRate: output.deviceSampleRate, preRoll: preRoll,
                                           keepAliveWhilePaused: keepAliveWhilePaused, keepAliveSound: keepAliveSound)
        } catch {
            if generation == myGeneration {
                let reason = "\(error)"
                state = .failed(reason)
                emit(.failed(reason: reason))
            }
            throw error
        }
        source = newSource
        state = .playing
        emit(.started(title: title, durationSeconds: newSource.durationSeconds))
        startRenderTask(source: newSource, output: output, generation: myGeneration)
        startProgressReports(generation: myGeneration)
        // Return at the first rendered block, so that a caller's next step (and a benchmark's
        // clock) sees a song that is really sounding, or the output's failure as an error.
        await newSource.waitUntilStarted()
        if newSource.hasEnded, let task = renderTask {
            await task.value
            if generation == myGeneration, let failure = lastFailure { throw failure }
        }
    }

    /// Pauses the song; outputs hold their position (devices play silence).
    public func pause() throws(PlaybackSessionError) {
        switch state {
        case .paused: return
        case .playing:
            source?.pause()
            state = .paused
            // The device plays out what it holds: the song is heard up to where rendering paused.
            emit(.paused(positionSeconds: positionSeconds))
        default:
            throw PlaybackSessionError(operation: "pause", state: state)
        }
    }

    /// The song's speaker is gone: whatever its output held, or is still given, is never heard,
    /// even if the output goes on taking audio for a while (`unheardSeconds` keeps it, and a
    /// resumed song can go back over it). Until the song resumes or a new output takes it.
    public func speakerGone() {
        source?.holdUnheard()
    }

    /// Resumes the paused song where it paused; returns once the output renders again.
    public func resume() async throws(PlaybackSessionError) {
        switch state {
        case .playing: return
        case .paused:
            state = .playing
            emit(.resumed(positionSeconds: positionSeconds))
            guard let source else { return }
            source.resume()
            if outputLost {
                // The device is opened again: a new stream, so the pre-roll plays again. A plain
                // resume on the same stream needs none (the stream stayed open, playing silence).
                outputLost = false
                source.expectNewOutput()
                startRenderTask(source: source, output: output, generation: generation)
            }
            await source.waitUntilStarted()
        default:
            throw PlaybackSessionError(operation: "resume", state: state)
        }
    }

    /// Stops the song and returns once its output has closed (a WAV file is complete and in
    /// place). Does nothing before the song started or after it ended.
    public func stop() async {
        guard state == .playing || state == .paused || state == .loading else { return }
        let position = heardPositionSeconds
        await endCurrentSong()
        state = .stopped
        emit(.stopped(positionSeconds: position))
    }

    /// Returns when the song has ended (finished, stopped or failed), with the final state; at
    /// once, with the current state, before it started.
    public func waitUntilEnded() async -> PlaybackState {
        while let task = renderTask {
            await task.value
            if renderTask == task { break } // Not replaced by a new output meanwhile.
        }
        return state
    }

    /// Sends the song to `newOutput`: it goes on from where it is, paused or not. The new output
    /// must become ready first; until then the song stays on the old one. Used when a speaker connects, or reconnects after a drop (pause, replace,
    /// resume). Throws if the new output cannot become ready or fails before taking any audio.
    public func replaceOutput(with newOutput: any AudioOutput) async throws {
        let current = generation
        try await newOutput.waitUntilReady()
        guard current == generation else { return } // A stop came first.
        output = newOutput
        guard let source, !source.hasEnded, let old = renderTask else { return }
        outputGeneration += 1
        old.cancel()
        await old.value
        guard current == generation, !source.hasEnded else { return }
        outputLost = false
        source.expectNewOutput()
        startRenderTask(source: source, output: newOutput, generation: current)
        if state == .playing {
            await source.waitUntilStarted()
        }
        if source.hasEnded, let task = renderTask {
            await task.value
            if generation == current, let failure = lastFailure { throw failure }
        }
    }

    // MARK: - Internals

    /// Stops the song's render and progress tasks and waits for the output to close.
    private func endCurrentSong() async {
        generation += 1
        outputLost = false
        progressTask?.cancel()
        progressTask = nil
        guard let task = renderTask else { return }
        renderTask = nil
        source?.stop()
        task.cancel()
        await task.value
    }

    /// Runs `output` on `source` in a task that reports back when the output returns.
    private func startRenderTask(source: PlaybackSource, output: any AudioOutput, generation song: Int) {
        let attachment = outputGeneration
        renderTask = Task { [weak self] in
            let result: Result<Void, any Error>
            do {
                try await output.play(source)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            guard let self else {
                source.stop()
                return
            }
            await self.outputEnded(generation: song, attachment: attachment, source: source, result: result)
        }
    }

    private func outputEnded(generation ended: Int, attachment: Int, source ending: PlaybackSource, result: Result<Void, any Error>) {
        // An output detached by `replaceOutput` hands the song on: nothing has ended.
        guard attachment == outputGeneration else { return }
        if case let .failure(error) = result, ended == generation, !ending.hasEnded,
           let outputError = error as? AudioOutputError, case .deviceStopped = outputError {
            if state == .paused {
                // The device died while the song was paused: the song waits for `resume`, which
                // opens the output again (a speaker that dropped and came back has a new PCM).
                outputLost = true
                return
            }
            if state == .playing, holdsSongWhenOutputStops, ending.devicePulls > 0 {
                // Held only once it has sounded: a device that never asked for audio fails the
                // start. What the dead device held is never heard: a resume goes back over it.
                ending.pause()
                ending.holdUnheard()
                outputLost = true
                state = .paused
                emit(.outputStopped(reason: "\(error)"))
                return
            }
        }
        ending.stop() // Whatever ended the output ends the song and frees the synthesiser.
        guard ended == generation else { return } // Stopped: already reported.
        progressTask?.cancel()
        progressTask = nil
        switch result {
        case .success:
            state = .finished
            emit(.progress(positionSeconds: ending.positionSeconds, durationSeconds: ending.durationSeconds))
            emit(.finished(title: title ?? ""))
        case let .failure(error):
            let reason = "\(error)"
            lastFailure = error
            state = .failed(reason)
            emit(.failed(reason: reason))
        }
    }

    private func startProgressReports(generation current: Int) {
        progressTask = makeProgressTask(clock: clock, generation: current)
    }

    /// Ticks at fixed instants from now (not "interval after the last tick"), so a late wake-up
    /// never shifts later reports and a test clock advanced in one jump still gets every tick.
    private func makeProgressTask<C: Clock<Duration>>(clock: C, generation current: Int) -> Task<Void, Never> {
        let start = clock.now
        let interval = progressInterval
        return Task { [weak self] in
            var tick = 1
            while !Task.isCancelled {
                do { try await clock.sleep(until: start.advanced(by: interval * tick), tolerance: nil) } catch { return }
                tick += 1
                guard let self, await self.reportProgress(generation: current) else { return }
            }
        }
    }

    /// Emits one progress event; returns false once the song it was started for is over.
    private func reportProgress(generation current: Int) -> Bool {
        guard current == generation, let source else { return false }
        if state == .playing {
            emit(.progress(positionSeconds: source.heardPositionSeconds, durationSeconds: source.durationSeconds))
        }
        return true
    }
}
