import ServiceLifecycle

/// Speaker loss and return: the gate dropping below `.playbackReady` while a song plays, and
/// rising again.
extension Player {
    /// Starts following the gate's level (once, on the first request: before it nothing plays).
    ///
    /// Levels are handled one at a time, in order, so a quick drop-and-rise pauses and then
    /// resumes rather than racing. Each level is compared with the state rather than treated as
    /// an edge, so nothing is lost if the watcher starts late.
    func watchSpeakerIfNeeded() {
        guard speakerWatcher == nil else { return }
        let levels = gate.levels()
        speakerWatcher = Task { [weak self] in
            for await _ in levels {
                guard let self else { return }
                await self.reconcileWithSpeaker()
            }
        }
    }

    /// Brings the current song in line with the gate: pause or stop it when the speaker is not
    /// ready, resume it when it is back (only if the speaker's loss paused it, never a user's pause).
    func reconcileWithSpeaker() async {
        defer { if keepAlive != nil { Task { await self.updateKeepAlive() } } }
        let ready = gate.isReached(.playbackReady)
        switch state {
        case let .playing(current) where !ready:
            switch settings.onSpeakerLost {
            case .pause:
                state = .paused(current, .speakerLost)
                await current.session.speakerGone()
                try? await current.session.pause()
                await notePosition(of: current, playedOut: false)
                logger.notice("speaker lost: \(current.file) paused at \(Self.loggedSeconds(lastPosition)); it resumes when the speaker is back")
                publish()
            case .stop:
                await stopForSpeakerLoss()
            }
        case .paused(_, .user) where !ready && settings.onSpeakerLost == .stop:
            await stopForSpeakerLoss()
        case let .paused(current, .user) where !ready && !current.outputMayBeGone:
            // Stays paused as the user asked; their `resume` opens the speaker's output again.
            state = .paused(current.speakerLeft, .user)
            await current.session.speakerGone()
        case let .paused(current, .speakerLost) where ready:
            state = .playing(current)
            logger.notice("speaker back: \(current.file) resumed")
            publish()
            await reopenOutput(of: current, after: "speaker back")
            // Returns once the output renders again; a stop meanwhile releases it.
            try? await current.session.resume()
        default:
            break
        }
    }

    /// Gives the song the speaker's output again after the speaker went away and came back, where
    /// its sink returns as a new one (see `PlaybackComponents.newOutputWhenSpeakerBack`); if it
    /// cannot be opened the song resumes on the old one, and a dead output fails it. Either way
    /// it goes on from where the listener stopped hearing it (`goBack`).
    func reopenOutput(of current: CurrentSong, after event: String) async {
        guard components.newOutputWhenSpeakerBack() else { return }
        // Asked before the output is opened again, which forgets the old one's buffer.
        let unheard = await current.session.unheardSeconds
        do { try await current.session.replaceOutput(with: try await components.makeOutput(route)) } catch {
            logger.warning("\(event): could not open the speaker's output again (\(error)); \(current.file) resumes on the old one")
        }
        await goBack(over: unheard, in: current)
    }

    /// The audio the speaker's output held but never played when it died went with it: the song
    /// goes on from where the listener stopped hearing it, not from where rendering was, so the
    /// notes at the moment of the loss are heard after all; a note sounding there is struck again
    /// (a plain seek would leave it silent until the next one). Not for a song in a section loop (a
    /// seek back over the loop's start would end the loop, and one back into the pass before
    /// would count that pass once more): it resumes where rendering was.
    func goBack(over unheard: Double, in current: CurrentSong) async {
        guard unheard >= 0.001, current.arrangement.loop == nil else { return }
        let rendered = await current.session.positionSeconds
        // A seek's target is in the written song's seconds, whatever tempo the song plays at.
        let target = current.arrangement.songSeconds(atArranged: max(0, rendered - unheard), in: current.written)
        logger.notice("speaker back: \(current.file) goes on from \(Self.loggedSeconds(target)), \(Int((unheard * 1000).rounded())) ms before where its lost output stopped: the speaker never played that audio")
        _ = try? await adjust(.seek(.seconds(target)), restrikingHeldNotes: true)
    }

    /// Starts following the gate's level now rather than at the first request: with `keep_alive`
    /// the idle speaker is kept awake before anyone plays a song. The daemon's `run()` calls it.
    public func followSpeaker() {
        watchSpeakerIfNeeded()
    }

    /// Plays the keep-alive signal exactly while it is wanted: `keep_alive` on, the speaker's
    /// audio path ready, no song waiting, starting, playing or paused (a paused song's own stream
    /// carries the signal: `PlaybackSession.keepAliveWhilePaused`). Otherwise stops it and returns
    /// once its output has closed.
    func updateKeepAlive() async {
        guard keepAlive != nil else { return }
        let idle = switch state {
        case .idle, .stopped, .failed: true
        case .waiting, .starting, .playing, .paused, .shutDown: false
        }
        if idle && gate.isReached(.playbackReady) {
            keepAlive?.run(on: route)
        } else if let ending = keepAlive?.halt() {
            await ending.value
        }
    }

    /// `on_speaker_lost = stop`: the song ends and the queue is emptied.
    private func stopForSpeakerLoss() async {
        let ended = await endCurrentSong(abandoningWith: { .stoppedBeforeStart(file: $0) }, reportAsStopped: true)
        if case let .started(file, position, _) = ended {
            logger.notice("speaker lost: \(file) stopped at \(Self.loggedSeconds(position)) (on_speaker_lost = stop)")
        }
    }

    /// Stops playback for good: the current song ends, waiting requests fail with
    /// `.shuttingDown`, later requests are refused, and every change stream ends.
    public func shutdown() async {
        await endCurrentSong(abandoningWith: { _ in .shuttingDown }, reportAsStopped: true)
        state = .shutDown
        await updateKeepAlive()
        speakerWatcher?.cancel()
        speakerWatcher = nil
        changeFeed.finish()
    }
}

/// Runs in the daemon's `ServiceGroup`: idle until graceful shutdown (SIGTERM), then stops
/// playback so a WAV output is closed complete and a device released before the process exits.
extension Player: Service {
    public func run() async throws {
        if keepAlive != nil { followSpeaker() }
        try? await gracefulShutdown()
        await shutdown()
    }
}
