import Playback
import Readiness
/// Starting songs and following their sessions: the player's work that suspends, each piece
/// reporting back to the core, which tells a result for the current song from a stale one.
extension Player {
    /// Takes `item` (already claimed as starting) through the gate and into the session.
    ///
    /// - Parameter timeout: the play timeout for a client's request; nil for a queued song, whose
    ///   client has already had its answer (it waits as long as the speaker is away).
    func start(_ item: PendingSong, timeout: Duration?) async throws(PlaybackServiceError) {
        let ticket = item.ticket
        guard core.currentTicket == ticket else { throw core.abandonment(of: item) }
        if !gate.isReached(.playbackReady) {
            try await waitForPlaybackReady(item, timeout: timeout)
        }
        guard core.currentTicket == ticket else { throw core.abandonment(of: item) }

        let output: any AudioOutput
        do {
            output = try await components.makeOutput(core.route)
        } catch {
            throw await failStart(item, reason: "\(error)")
        }
        guard core.currentTicket == ticket else { throw core.abandonment(of: item) }
        let session = components.makeSession(output)
        // Subscribed before play, so an end or failure right after the start is never missed.
        let events = await session.events()
        guard core.currentTicket == ticket else { throw core.abandonment(of: item) }

        let playing = Task { try await session.start(item.arranged, title: item.file) }
        starts[ticket] = (session, playing)
        let outcome = await withTaskCancellationHandler { await playing.result } onCancel: { playing.cancel() }
        starts[ticket] = nil
        guard core.currentTicket == ticket else {
            await session.stop()
            throw core.abandonment(of: item)
        }
        if case let .failure(error) = outcome {
            if error is CancellationError {
                await run(.startCancelled(ticket: ticket))
                throw .cancelled(file: item.file)
            }
            throw await failStart(item, reason: "\(error)")
        }
        let forwarder = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                if await !self.sessionReported(event, ticket: ticket) { return }
            }
        }
        sessions[ticket] = (session, forwarder)
        await run(.started(ticket: ticket))
    }

    /// Parks `item` in the readiness gate until `.playbackReady`, or throws on timeout,
    /// replacement, stop or the caller's cancellation.
    private func waitForPlaybackReady(_ item: PendingSong, timeout: Duration?) async throws(PlaybackServiceError) {
        await run(.waitBegan(ticket: item.ticket))
        guard core.currentTicket == item.ticket else { throw core.abandonment(of: item) }
        let gate = gate
        let waiter = Task { try await gate.wait(for: .playbackReady, timeout: timeout) }
        waits[item.ticket] = waiter
        let outcome = await withTaskCancellationHandler { await waiter.result } onCancel: { waiter.cancel() }
        waits[item.ticket] = nil
        guard core.currentTicket == item.ticket else { throw core.abandonment(of: item) }
        let ended: PlayerCore.WaitOutcome = switch outcome {
        case .success: .reached
        case let .failure(error):
            if case ReadinessError.timedOut = error, let timeout { .timedOut(after: timeout) } else { .cancelled }
        }
        if let refusal = await run(.waitEnded(ticket: item.ticket, ended)) { throw refusal }
    }

    /// Records a start that failed (output or session); the core moves on to the queue.
    private func failStart(_ item: PendingSong, reason: String) async -> PlaybackServiceError {
        await run(.startFailed(ticket: item.ticket, reason: reason))
        return .startFailed(file: item.file, reason: reason)
    }

    /// Hands one event of a started song's session to the core, with what the session says
    /// beside it; returns false once the song is over.
    func sessionReported(_ event: PlaybackEvent, ticket: Int) async -> Bool {
        guard core.currentTicket == ticket, let session = sessions[ticket]?.session else { return false }
        switch event {
        case let .progress(position, _):
            let latency = await session.outputLatencySeconds
            await run(.progress(ticket: ticket, seconds: position, latency: latency))
            return core.currentTicket == ticket
        case .finished:
            guard core.isPlaying(ticket) else { return true }
            let gaps = await session.outputUnderflows
            guard core.isPlaying(ticket) else { return true }
            await run(.finished(ticket: ticket, underflows: gaps))
            if core.currentTicket != ticket { sessions[ticket] = nil }
            return false
        case let .failed(reason):
            let heard = await session.heardPositionSeconds
            await run(.failed(ticket: ticket, reason: reason, heardSeconds: heard))
            if core.currentTicket != ticket { sessions[ticket] = nil }
            return false
        case let .outputStopped(reason):
            let heard = await session.heardPositionSeconds
            await run(.outputStopped(ticket: ticket, reason: reason, heardSeconds: heard))
            return core.currentTicket == ticket
        case .started, .paused, .resumed, .stopped:
            return true // Our own requests: already reported by the core.
        }
    }
}
