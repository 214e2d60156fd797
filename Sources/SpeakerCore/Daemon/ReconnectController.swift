/// Carries out a ``ReconnectDecision``: runs connect attempts and arms the retry timer.
///
/// The decision (with its ``ReconnectPolicy``) says what happens; this actor only feeds it
/// events in order and runs its effects. Timers sleep on the injected clock; an attempt is one
/// call of the injected `attempt` closure (in the daemon: BlueZ `Device1.Connect` on the target
/// speaker). Observers follow the `changes` stream to show a status ("Speaker lost; retrying in
/// 8 s").
public actor ReconnectController<C: Clock> where C.Duration == Duration {
    public typealias Decision = ReconnectDecision<C>
    public typealias Policy = ReconnectPolicy<C>
    public typealias AttemptResult = Decision.AttemptResult
    public typealias Change = Decision.Change

    private var decision: Decision
    private let clock: C
    private let attempt: @Sendable () async -> AttemptResult
    private var timer: Task<Void, Never>?
    private var attempts: [Decision.Attempt: Task<Void, Never>] = [:]
    private var replies: [Decision.Reply: CheckedContinuation<AttemptResult, Never>] = [:]
    private var lastReply: UInt64 = 0
    private let continuation: AsyncStream<Change>.Continuation
    public nonisolated let changes: AsyncStream<Change>

    public init(policy: Policy, clock: C, attempt: @escaping @Sendable () async -> AttemptResult) {
        decision = Decision(policy: policy)
        self.clock = clock
        self.attempt = attempt
        (changes, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit {
        timer?.cancel()
        for task in attempts.values { task.cancel() }
        continuation.finish()
    }

    public var state: Policy.State { decision.policy.state }

    /// Feeds one event to the policy and carries out what it decides.
    public func handle(_ event: Policy.Event) { feed(.policy(event)) }

    /// An attempt the user (or start-up) asked for, awaited: lifts a user's hold, cancels any
    /// pending retry, and on failure leaves the policy's backoff in charge. A caller that is
    /// cancelled cancels its attempt.
    public func connectNow() async -> AttemptResult {
        lastReply += 1
        let reply = Decision.Reply(lastReply)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                replies[reply] = continuation
                feed(.connectNow(reply))
            }
        } onCancel: {
            Task { await self.feed(.callerLeft(reply)) }
        }
    }

    /// Stops timers and attempts (daemon shutdown); nothing starts again.
    public func shutdown() { feed(.stop) }

    private func feed(_ event: Decision.Event) {
        for effect in decision.step(event, now: clock.now) { run(effect) }
    }

    private func run(_ effect: Decision.Effect) {
        switch effect {
        case .tell(let change):
            continuation.yield(change)
        case .start(let id):
            attempts[id] = Task { [attempt] in
                let result = await attempt()
                self.attempts[id] = nil
                self.feed(.attemptEnded(id, result))
            }
        case .cancel(let id):
            attempts[id]?.cancel()
        case .arm(let deadline):
            timer?.cancel()
            timer = clock.timer(at: deadline) { await self.feed(.retryDue(deadline: deadline)) }
        case .cancelTimer:
            timer?.cancel()
            timer = nil
        case .answer(let reply, let result):
            replies.removeValue(forKey: reply)?.resume(returning: result)
        case .endChanges:
            continuation.finish()
        }
    }
}
