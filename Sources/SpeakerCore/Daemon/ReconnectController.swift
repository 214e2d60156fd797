/// Carries out a `ReconnectPolicy`'s decisions: runs connect attempts and arms retry timers.
///
/// The policy decides, this actor acts, so the rules stay pure and this stays small. Timers
/// sleep on the injected clock; an attempt is one call of the injected `attempt` closure
/// (in the daemon: BlueZ `Device1.Connect` on the target speaker). Observers follow the
/// `changes` stream to show a status ("Speaker lost; retrying in 8 s").
public actor ReconnectController<C: Clock> where C.Duration == Duration {
    public typealias Policy = ReconnectPolicy<C>

    /// What an attempt ended with.
    public enum AttemptResult: Sendable, Equatable {
        case connected
        case failed(reason: String)
    }

    /// What observers are told after each decision.
    public enum Change: Sendable, Equatable {
        case attempting
        case retryScheduled(after: Duration)
        case connected
        case attemptFailed(reason: String)
        case holding
    }

    private var policy: Policy
    private let clock: C
    private let attempt: @Sendable () async -> AttemptResult
    private var timer: Task<Void, Never>?
    private var attemptTask: Task<Void, Never>?
    private let continuation: AsyncStream<Change>.Continuation
    public nonisolated let changes: AsyncStream<Change>

    public init(policy: Policy, clock: C, attempt: @escaping @Sendable () async -> AttemptResult) {
        self.policy = policy
        self.clock = clock
        self.attempt = attempt
        (changes, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit {
        timer?.cancel()
        attemptTask?.cancel()
        continuation.finish()
    }

    public var state: Policy.State { policy.state }

    /// Feeds one event to the policy and carries out its action.
    public func handle(_ event: Policy.Event) {
        let action = policy.handle(event)
        switch action {
        case .none:
            break
        case .connectNow:
            timer?.cancel()
            timer = nil
            continuation.yield(.attempting)
            attemptTask = Task { [attempt] in
                let result = await attempt()
                self.finish(result)
            }
        case .retry(let delay):
            timer?.cancel()
            continuation.yield(.retryScheduled(after: delay))
            timer = Task { [clock] in
                do { try await clock.sleep(for: delay) } catch { return }
                self.handle(.retryDue)
            }
        case .cancelRetry:
            timer?.cancel()
            timer = nil
            if event == .connected { continuation.yield(.connected) }
            if case .heldByUser = policy.state { continuation.yield(.holding) }
        }
    }

    /// An attempt the user (or start-up) asked for, awaited: lifts a user's hold, cancels any
    /// pending retry, and on failure leaves the policy's backoff in charge.
    public func connectNow() async -> AttemptResult {
        _ = policy.handle(.userAskedToConnect)
        timer?.cancel()
        timer = nil
        continuation.yield(.attempting)
        let result = await attempt()
        finish(result)
        return result
    }

    /// Stops timers and attempts (daemon shutdown).
    public func shutdown() {
        timer?.cancel()
        attemptTask?.cancel()
        continuation.finish()
    }

    private func finish(_ result: AttemptResult) {
        switch result {
        case .connected:
            handle(.connected)
        case .failed(let reason):
            continuation.yield(.attemptFailed(reason: reason))
            handle(.connectFailed)
        }
    }
}
