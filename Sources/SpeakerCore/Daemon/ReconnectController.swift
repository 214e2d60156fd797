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
        /// The speaker would not pair (not in pairing mode, or it refused the keys): retrying
        /// cannot help until a person acts, so none is made.
        case pairingRefused(reason: String)
    }

    /// What observers are told after each decision.
    public enum Change: Sendable, Equatable {
        case attempting
        case retryScheduled(after: Duration)
        case connected
        case attemptFailed(reason: String)
        case holding
        /// The speaker would not pair; nothing is tried until the user asks (the reason is BlueZ's).
        case needsPairing(reason: String)
    }

    /// Running until `shutdown()`; after it nothing is started again. Without this, an attempt
    /// cancelled by the shutdown returns "failed", the policy answers with a retry, and a timer
    /// armed after shutdown sleeps on (up to the backoff cap) with this actor and its attempt
    /// closure behind it.
    private enum Lifecycle { case running, stopped }

    private var lifecycle = Lifecycle.running
    private var policy: Policy
    private let clock: C
    private let attempt: @Sendable () async -> AttemptResult
    private var timer: Task<Void, Never>?
    /// Attempts the policy started, until each reports back (normally one; a new one may start
    /// while an older one unwinds). All are cancelled at shutdown.
    private var attemptTasks: [UInt64: Task<Void, Never>] = [:]
    private var nextAttempt: UInt64 = 0
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
        for task in attemptTasks.values { task.cancel() }
        continuation.finish()
    }

    public var state: Policy.State { policy.state }

    /// Feeds one event to the policy and carries out its action.
    public func handle(_ event: Policy.Event) {
        guard lifecycle == .running else { return }
        let action = policy.handle(event)
        switch action {
        case .none:
            break
        case .connectNow:
            timer?.cancel()
            timer = nil
            continuation.yield(.attempting)
            nextAttempt += 1
            let id = nextAttempt
            attemptTasks[id] = Task { [attempt] in
                let result = await attempt()
                self.attemptTasks[id] = nil
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
        guard lifecycle == .running else { return .failed(reason: "speakerd is stopping") }
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
        lifecycle = .stopped
        timer?.cancel()
        for task in attemptTasks.values { task.cancel() }
        attemptTasks = [:]
        continuation.finish()
    }

    private func finish(_ result: AttemptResult) {
        guard lifecycle == .running else { return }
        switch result {
        case .connected:
            handle(.connected)
        case .failed(let reason):
            continuation.yield(.attemptFailed(reason: reason))
            handle(.connectFailed)
        case .pairingRefused(let reason):
            continuation.yield(.attemptFailed(reason: reason))
            handle(.pairingRefused)
            if case .needsPairing = policy.state { continuation.yield(.needsPairing(reason: reason)) }
        }
    }
}
