/// A target's reconnects, decided in one synchronous step: which attempts start and who hears
/// each one's result, which retry timer is armed, what the link is told, and that nothing moves
/// once the daemon stops. ``ReconnectPolicy`` inside it decides *when* to try; this carries its
/// answers into effects and keeps the books (attempts under way, the armed deadline, running or
/// stopped). ``LinkCore`` holds one for the current target and carries its effects into its own.
public struct ReconnectDecision<C: Clock>: Sendable where C.Duration == Duration {
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

    /// One attempt, numbered by the decision.
    public struct Attempt: Hashable, Sendable, Comparable {
        let number: UInt64
        public static func < (a: Self, b: Self) -> Bool { a.number < b.number }
    }

    /// A caller waiting for the attempt it asked for, numbered by the runner.
    public struct Reply: Hashable, Sendable {
        let number: UInt64
        public init(_ number: UInt64) { self.number = number }
    }

    public enum Event: Sendable, Equatable {
        /// Something the policy hears (BlueZ, logind, the user, a request waiting).
        case policy(Policy.Event)
        /// An attempt a caller awaits (the user's `connect`, start-up's): answered by `reply`.
        case connectNow(Reply)
        /// The caller of `reply` stopped waiting (cancelled): its attempt is cancelled.
        case callerLeft(Reply)
        case attemptEnded(Attempt, AttemptResult)
        /// The timer armed for `deadline` fired.
        case retryDue(deadline: C.Instant)
        /// The daemon stops: nothing starts or is armed again.
        case stop
    }

    public enum Effect: Sendable, Equatable {
        case tell(Change)
        /// Run one attempt; its end comes back as `attemptEnded`.
        case start(Attempt)
        /// Cancel an attempt under way (it still ends, and is then ignored or judged as failed).
        case cancel(Attempt)
        /// Arm the retry timer for `deadline`, replacing any other.
        case arm(deadline: C.Instant)
        case cancelTimer
        case answer(Reply, AttemptResult)
        /// No more changes: the observers' stream ends.
        case endChanges
    }

    private enum Lifecycle: Sendable { case running, stopped }

    public private(set) var policy: Policy
    private var lifecycle = Lifecycle.running
    /// The armed timer's deadline: a firing for any other is stale.
    public private(set) var armed: C.Instant?
    /// Attempts under way, each with the caller awaiting it.
    public private(set) var underWay: [Attempt: UnderWay] = [:]

    public struct UnderWay: Sendable, Equatable {
        /// Who awaits the attempt (nil: the policy's own).
        public var reply: Reply?
        /// The user disconnected after it began: its success is older than their wish, so it
        /// ends no hold (its caller still hears it).
        public var overruled = false
    }
    private var lastAttempt: UInt64 = 0

    public init(policy: Policy) { self.policy = policy }

    public var isStopped: Bool { lifecycle == .stopped }

    /// The user disconnected (here or on this machine) and has not asked since.
    public var isHeldByUser: Bool {
        switch policy.state {
        case .heldByUser, .asleep(.stayHeld): true
        default: false
        }
    }

    public mutating func step(_ event: Event, now: C.Instant) -> [Effect] {
        guard lifecycle == .running else {
            // A caller asking after the stop still hears an answer; nothing else moves.
            if case .connectNow(let reply) = event { return [.answer(reply, .failed(reason: "speakerd is stopping"))] }
            return []
        }
        switch event {
        case .policy(let heard):
            let effects = carryOut(policy.handle(heard, now: now), after: heard, now: now)
            if isHeldByUser { for attempt in underWay.keys { underWay[attempt]?.overruled = true } }
            return effects
        case .connectNow(let reply):
            // The user's (or start-up's) ask lifts a hold and replaces any retry armed.
            _ = policy.handle(.userAskedToConnect, now: now)
            return disarm() + [.tell(.attempting), start(for: reply)]
        case .callerLeft(let reply):
            guard let attempt = underWay.first(where: { $0.value.reply == reply })?.key else { return [] }
            return [.cancel(attempt)]
        case .attemptEnded(let attempt, let result):
            guard let ended = underWay.removeValue(forKey: attempt) else { return [] }
            var effects = ended.overruled ? [] : finish(result, now: now)
            if let reply = ended.reply { effects.append(.answer(reply, result)) }
            return effects
        case .retryDue(let deadline):
            guard armed == deadline else { return [] }  // a timer replaced or cancelled since
            armed = nil
            return carryOut(policy.handle(.retryDue, now: now), after: .retryDue, now: now)
        case .stop:
            lifecycle = .stopped
            var effects = disarm()
            for (attempt, ended) in underWay.sorted(by: { $0.key < $1.key }) {
                effects.append(.cancel(attempt))
                if let reply = ended.reply { effects.append(.answer(reply, .failed(reason: "speakerd is stopping"))) }
            }
            underWay = [:]
            effects.append(.endChanges)
            return effects
        }
    }

    private mutating func carryOut(_ action: Policy.Action, after event: Policy.Event, now: C.Instant) -> [Effect] {
        switch action {
        case .none:
            return []
        case .connectNow:
            return disarm() + [.tell(.attempting), start(for: nil)]
        case .retry(let delay):
            let deadline = now.advanced(by: delay)
            armed = deadline
            return [.tell(.retryScheduled(after: delay)), .arm(deadline: deadline)]
        case .cancelRetry:
            var effects = disarm()
            if event == .connected { effects.append(.tell(.connected)) }
            if case .heldByUser = policy.state { effects.append(.tell(.holding)) }
            return effects
        }
    }

    private mutating func finish(_ result: AttemptResult, now: C.Instant) -> [Effect] {
        switch result {
        case .connected:
            return carryOut(policy.handle(.connected, now: now), after: .connected, now: now)
        case .failed(let reason):
            return [.tell(.attemptFailed(reason: reason))] + carryOut(policy.handle(.connectFailed, now: now), after: .connectFailed, now: now)
        case .pairingRefused(let reason):
            var effects = [Effect.tell(.attemptFailed(reason: reason))]
            effects += carryOut(policy.handle(.pairingRefused, now: now), after: .pairingRefused, now: now)
            if case .needsPairing = policy.state { effects.append(.tell(.needsPairing(reason: reason))) }
            return effects
        }
    }

    private mutating func start(for reply: Reply?) -> Effect {
        lastAttempt += 1
        let attempt = Attempt(number: lastAttempt)
        underWay[attempt] = UnderWay(reply: reply)
        return .start(attempt)
    }

    private mutating func disarm() -> [Effect] {
        guard armed != nil else { return [] }
        armed = nil
        return [.cancelTimer]
    }
}
