import Playback
import Readiness
/// Starting, ending and chaining songs: the parts of the player that suspend while the
/// state may change under them, so each step re-checks that its song is still the current one.
extension Player {
    /// What `endCurrentSong` ended.
    enum EndedSong {
        case nothing
        case pending(file: String)
        case started(file: String, position: Double, duration: Double)
    }

    /// Takes `item` (already claimed as `.starting`) through the gate and into the session.
    ///
    /// - Parameter timeout: the play timeout for a client's request; nil for a queued song, whose
    ///   client has already had its answer (it waits as long as the speaker is away).
    func start(_ item: PendingSong, timeout: Duration?) async throws(PlaybackServiceError) {
        if !gate.isReached(.playbackReady) {
            try await waitForPlaybackReady(item, timeout: timeout)
        }
        guard currentTicket == item.ticket else { throw abandonment(of: item) }
        // The song's stream takes over from the keep-alive signal's (same speaker, perhaps the same file).
        await updateKeepAlive()
        guard currentTicket == item.ticket else { throw abandonment(of: item) }

        let output: any AudioOutput
        do {
            output = try await components.makeOutput(route)
        } catch {
            throw failStart(item, reason: "\(error)")
        }
        guard currentTicket == item.ticket else { throw abandonment(of: item) }
        let session = components.makeSession(output)
        // Subscribed before play, so an end or failure right after the start is never missed.
        let events = await session.events()
        guard currentTicket == item.ticket else { throw abandonment(of: item) }

        let playing = Task { try await session.start(item.arranged, title: item.file) }
        state = .starting(item, session: session, task: playing)
        let outcome = await withTaskCancellationHandler { await playing.result } onCancel: { playing.cancel() }
        guard currentTicket == item.ticket else {
            await session.stop()
            throw abandonment(of: item)
        }
        if case let .failure(error) = outcome {
            if error is CancellationError {
                state = .idle
                publish()
                throw .cancelled(file: item.file)
            }
            throw failStart(item, reason: "\(error)")
        }

        let forwarder = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                if await !self.sessionReported(event, ticket: item.ticket) { return }
            }
        }
        // Told in the written song's seconds, whatever the song plays with (`songPosition`).
        let current = CurrentSong(ticket: item.ticket, file: item.file, durationSeconds: item.written.durationSeconds,
                                  session: session, written: item.written, arrangement: item.arrangement,
                                  sessionEvents: forwarder)
        state = .playing(current)
        lastPosition = current.songPosition(0)
        lastLatency = nil
        // Said when the song starts, not when it was asked for: a queued or waiting song may never play.
        logger.info("playing \(item.file)\(onSpeaker)")
        publish()
        // The speaker may have dropped while the song was starting.
        await reconcileWithSpeaker()
    }

    /// Parks `item` in the readiness gate until `.playbackReady`, or throws on timeout,
    /// replacement, stop or the caller's cancellation.
    private func waitForPlaybackReady(_ item: PendingSong, timeout: Duration?) async throws(PlaybackServiceError) {
        let gate = gate
        let waiter = Task { try await gate.wait(for: .playbackReady, timeout: timeout) }
        state = .waiting(item, waiter: waiter)
        publish()
        let outcome = await withTaskCancellationHandler { await waiter.result } onCancel: { waiter.cancel() }
        guard currentTicket == item.ticket else { throw abandonment(of: item) }
        switch outcome {
        case .success:
            state = .starting(item, session: nil, task: nil)
        case let .failure(error):
            let failure: PlaybackServiceError
            if case ReadinessError.timedOut = error, let timeout {
                failure = .notReady(file: item.file, after: timeout, waitingFor: waiting?.message ?? "starting…")
            } else {
                failure = .cancelled(file: item.file)
            }
            // Everything queued behind it would wait for the same absent speaker: give up on it too.
            if currentTicket == item.ticket {
                state = .idle
                queue.removeAll()
                publish()
            }
            throw failure
        }
    }

    /// Ends the current song, or abandons the one waiting to start (its `play` call then throws
    /// `reason(file)`), and empties the queue. Returns once the session has stopped, so the next
    /// song never finds the SoundFont's synthesiser still taken.
    @discardableResult
    func endCurrentSong(
        abandoningWith reason: (String) -> PlaybackServiceError,
        reportAsStopped: Bool
    ) async -> EndedSong {
        queue.removeAll()
        switch state {
        case .idle, .stopped, .failed, .shutDown:
            return .nothing
        case let .waiting(item, waiter):
            abandoned[item.ticket] = reason(item.file)
            state = .idle
            waiter.cancel()
            if reportAsStopped { publish() }
            return .pending(file: item.file)
        case let .starting(item, session, task):
            abandoned[item.ticket] = reason(item.file)
            state = .idle
            task?.cancel()
            await session?.stop()
            if reportAsStopped { publish() }
            return .pending(file: item.file)
        case let .playing(current), let .paused(current, _):
            state = .idle
            current.sessionEvents.cancel()
            let position = (playingSong ?? current).songPosition(await current.session.heardPositionSeconds)
            await current.session.stop()
            if case .idle = state {
                state = .stopped(file: current.file, position: position, duration: current.durationSeconds)
                lastPosition = position
                if reportAsStopped { publish() }
            }
            return .started(file: current.file, position: position, duration: current.durationSeconds)
        }
    }

    /// Handles one event of the current song's session; returns false once the song is over.
    func sessionReported(_ event: PlaybackEvent, ticket: Int) async -> Bool {
        guard currentTicket == ticket else { return false }
        switch event {
        case let .progress(position, _):
            let latency = await playingSong?.session.outputLatencySeconds
            guard currentTicket == ticket else { return false }
            lastPosition = playingSong?.songPosition(position) ?? position
            lastLatency = latency
            publish()
            return true
        case .finished:
            guard case let .playing(song) = state else { return true }
            let gaps = await song.session.outputUnderflows
            guard currentTicket == ticket, case let .playing(current) = state else { return true }
            // Where the song as played ends, in the written song (a `--to`, a loop's end).
            lastPosition = current.songPosition(.greatestFiniteMagnitude)
            state = .idle
            logger.info("finished playing \(current.file)\(onSpeaker)")
            if gaps > 0 {
                logger.warning("\(current.file) was heard with \(gaps) gap\(gaps == 1 ? "" : "s"): the sound server ran out of audio while it played (is the machine too busy?)")
            }
            publish()
            startNextQueuedSong()
            await updateKeepAlive()
            return false
        case let .failed(reason):
            let current: CurrentSong? = switch state {
            case let .playing(current), let .paused(current, _): current
            default: nil
            }
            let file = current?.file ?? ""
            logger.error("playback of \(file)\(onSpeaker) failed: \(reason)")
            // The status keeps saying why until the next song, so `status` and `play --wait`
            // report a dead device instead of an innocent "idle".
            if let current {
                let position = current.songPosition(await current.session.heardPositionSeconds)
                guard currentTicket == ticket else { return false } // Replaced or stopped meanwhile.
                lastPosition = position
                state = .failed(file: file, reason: reason, position: position, duration: current.durationSeconds)
            } else {
                state = .idle
            }
            publish()
            startNextQueuedSong()
            await updateKeepAlive()
            return false
        case .started, .paused, .resumed, .stopped:
            return true // Our own requests: already reported by the player.
        }
    }

    /// " on JBL Flip 5 (11:22:…)" for a log line, or nothing when the speaker is not known here.
    var onSpeaker: String { speaker.map { " on \($0.name) (\($0.address))" } ?? "" }

    /// A position for a log line, to a tenth of a second: "2.9 s".
    static func loggedSeconds(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// One line for a song a request or `stop` ended: where it was, or that it never started.
    func logEnded(_ ended: EndedSong, _ why: String) {
        switch ended {
        case .nothing: break
        case let .pending(file): logger.info("\(file)\(onSpeaker) \(why) before it started")
        case let .started(file, position, _): logger.info("\(file)\(onSpeaker) \(why) at \(Self.loggedSeconds(position))")
        }
    }

    /// Starts the next queued song, if any; it waits for the speaker without a timeout.
    func startNextQueuedSong() {
        guard currentTicket == nil, let next = queue.popFirst() else { return }
        state = .starting(next, session: nil, task: nil)
        Task { [weak self] in
            do {
                try await self?.start(next, timeout: nil)
            } catch {
                self?.logger.info("queued song \(next.file) did not play: \(error)")
            }
        }
    }

    /// The error a request gets when its song was abandoned (replaced, stopped) before starting.
    func abandonment(of item: PendingSong) -> PlaybackServiceError {
        abandoned.removeValue(forKey: item.ticket) ?? .replaced(file: item.file, by: "a newer request")
    }

    /// Records a start that failed (output or session) and moves on to the queue.
    private func failStart(_ item: PendingSong, reason: String) -> PlaybackServiceError {
        let failure = PlaybackServiceError.startFailed(file: item.file, reason: reason)
        if currentTicket == item.ticket {
            state = .idle
            publish()
            startNextQueuedSong()
            Task { await self.updateKeepAlive() }
        }
        return failure
    }
}
