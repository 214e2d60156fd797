import Logging
import Playback
import ServiceLifecycle

/// Running the core's effects, following the gate, and stopping for good.
extension Player {
    /// Steps the core with the gate's level now and carries out its effects in order; returns
    /// the refusal, if the step made one (its caller throws it).
    @discardableResult
    func run(_ event: PlayerCore.Event) async -> PlaybackServiceError? {
        var refusal: PlaybackServiceError?
        for effect in core.step(event, ready: gate.isReached(.playbackReady)) {
            if case let .refuse(error) = effect { refusal = error } else { await perform(effect) }
        }
        return refusal
    }

    func perform(_ effect: PlayerCore.Effect) async {
        switch effect {
        case let .publish(snapshot):
            changeFeed.publish(snapshot)
        case let .log(level, line):
            logger.log(level: level, "\(line)")
        case .refuse:
            break  // thrown by the caller of the step
        case let .start(item, timeout, _):
            // A queued song: its client has had its answer, so it starts in a task of its own.
            Task { [weak self] in
                do throws(PlaybackServiceError) {
                    try await self?.start(item, timeout: timeout)
                } catch {
                    self?.logger.info("queued song \(item.file) did not play: \(error)")
                }
            }
        case let .cancelWait(ticket):
            waits.removeValue(forKey: ticket)?.cancel()
        case let .cancelStart(ticket):
            guard let start = starts.removeValue(forKey: ticket) else { return }
            start.task.cancel()
            await start.session.stop()
        case let .endSession(ticket):
            guard let song = sessions.removeValue(forKey: ticket) else { return }
            song.events.cancel()
            let heard = await song.session.heardPositionSeconds
            await song.session.stop()
            await run(.sessionEnded(ticket: ticket, heardSeconds: heard))
        case let .pauseSession(ticket):
            guard let session = sessions[ticket]?.session else { return }
            try? await session.pause()
            let rendered = await session.positionSeconds
            await run(.sessionPaused(ticket: ticket, seconds: rendered))
        case let .speakerGone(ticket, pause):
            guard let session = sessions[ticket]?.session else { return }
            await session.speakerGone()
            guard pause else { return }
            try? await session.pause()
            let heard = await session.heardPositionSeconds
            await run(.lostSpeakerPaused(ticket: ticket, heardSeconds: heard))
        case let .resumeSession(ticket, reopen, after):
            await resumeSession(ticket, reopening: reopen && components.newOutputWhenSpeakerBack(), after: after)
        case let .restartOutput(ticket):
            await resumeSession(ticket, reopening: true, after: "output stopped")
        case let .seekRestriking(ticket, seconds):
            guard core.playingSong?.ticket == ticket else { return }
            _ = try? await adjust(.seek(.seconds(seconds)), restrikingHeldNotes: true)
        case let .keepAlive(on):
            if on {
                keepAlive?.run(on: core.route)
            } else if let ending = keepAlive?.halt() {
                await ending.value
            }
        }
    }

    /// Resumes the song's session, first (`reopening`) on its output opened again.
    private func resumeSession(_ ticket: Int, reopening: Bool, after event: String) async {
        guard let session = sessions[ticket]?.session else { return }
        if reopening { await reopenOutput(of: ticket, session, after: event) }
        // A pause or stop that came while the output was opened again has the last word.
        guard core.isPlaying(ticket) else { return }
        try? await session.resume()
    }

    /// Gives the song its output again: after the speaker went away and came back, where its
    /// sink returns as a new one (see `PlaybackComponents.newOutputWhenSpeakerBack`), or after its
    /// output stopped; if it cannot be opened the song resumes on the old one, and a dead output
    /// fails it. The core then says where it goes on from (`outputReopened`).
    private func reopenOutput(of ticket: Int, _ session: PlaybackSession, after event: String) async {
        // Asked before the output is opened again, which forgets the old one's buffer.
        let unheard = await session.unheardSeconds
        do { try await session.replaceOutput(with: try await components.makeOutput(core.route)) } catch {
            logger.warning("\(event): could not open the speaker's output again (\(error)); \(core.playingSong?.file ?? "the song") resumes on the old one")
        }
        let rendered = await session.positionSeconds
        await run(.outputReopened(ticket: ticket, unheard: unheard, renderedSeconds: rendered))
    }

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
                await self.run(.level)
            }
        }
    }

    /// Starts following the gate's level now rather than at the first request: with `keep_alive`
    /// the idle speaker is kept awake before anyone plays a song. The daemon's `run()` calls it.
    public func followSpeaker() {
        watchSpeakerIfNeeded()
    }

    /// Stops playback for good: the current song ends, waiting requests fail with
    /// `.shuttingDown`, later requests are refused, and every change stream ends.
    public func shutdown() async {
        await run(.shutdown)
        await run(.shutDownComplete)
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
