/// Turns "the system resumed" into "reconnect the speaker now", a short delay later.
///
/// Right after resume the Bluetooth adapter and bluetoothd are still coming back; connecting
/// at once mostly fails and costs a backoff step. Waiting a moment (2 s by default) lets the
/// stack settle. A second resume during the delay restarts it, and preparing for sleep cancels
/// a pending request: there is no point connecting just before the link dies again.
public actor ResumeReconnectTrigger {
    /// The requests the daemon consumes: one element per "reconnect now".
    public nonisolated let requests: AsyncStream<Void>

    private let clock: any Clock<Duration>
    private let delay: Duration
    private let continuation: AsyncStream<Void>.Continuation
    private var pending: Task<Void, Never>?

    public init(delay: Duration = .seconds(2), clock: any Clock<Duration> = ContinuousClock()) {
        self.delay = delay
        self.clock = clock
        (requests, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Follows suspend and resume (`LogindClient.sleepEvents()`) until it ends.
    public func follow(_ sleepEvents: some AsyncSequence<SleepEvent, Never>) async {
        for await event in sleepEvents {
            handle(event)
        }
    }

    /// `resumed` (re)starts the delay; `preparingForSleep` cancels a pending request.
    public func handle(_ event: SleepEvent) {
        pending?.cancel()
        pending = nil
        guard event == .resumed else { return }
        // The deadline is fixed now, not when the task first runs, so the delay is measured
        // from the resume itself.
        let deadline = clock.now.advanced(by: delay)
        pending = Task { [clock, continuation] in
            do {
                try await Self.sleep(on: clock, until: deadline)
            } catch {
                return  // restarted or cancelled
            }
            guard !Task.isCancelled else { return }
            continuation.yield(())
        }
    }

    /// Cancels a pending request and ends ``requests``.
    public func finish() {
        pending?.cancel()
        pending = nil
        continuation.finish()
    }

    private static func sleep<C: Clock<Duration>>(on clock: C, until deadline: any InstantProtocol<Duration>) async throws {
        guard let deadline = deadline as? C.Instant else { return }
        // A deadline already reached is due now: a task that starts late (a loaded machine)
        // must not wait for the clock to pass it again (a test clock sleeps on `now == deadline`).
        guard clock.now < deadline else { return }
        try await clock.sleep(until: deadline, tolerance: nil)
    }
}
