/// Decides when speakerd tries to (re)connect its speaker, and when it must leave it alone.
///
/// Pure: it never sleeps, never reads a clock and never talks to BlueZ. Each `handle(_:now:)`
/// takes one event (from BlueZ, logind, the user, or a retry timer the caller armed) and the
/// instant it happened, and returns one `Action` for the caller to carry out. Jitter comes from
/// the injected random source, so every rule is a deterministic scenario in the tests. `C` is
/// the clock whose instants the caller passes.
///
/// The rules, in the words of the issue:
/// - link lost (timeout, or `Connected` false with no reason) or unreachable at boot: eager
///   backoff with jitter, ~1 s up to the cap; at once when the device shows up again;
/// - the speaker ended the link (reason remote): gentle backoff; re-arm when it shows up
///   again, but never sooner than `minimumGentleSpacing` after the previous attempt;
/// - the user disconnected (through speakerd, or locally): nothing until asked;
/// - the speaker would not pair (not in pairing mode, or it refused the keys): nothing until
///   asked, as no retry can put it in pairing mode (and each one pages it again);
/// - resume from suspend: reconnect after `resumeDelay`.
public struct ReconnectPolicy<C: Clock>: Sendable where C.Duration == Duration {
    /// Why BlueZ says a link went down (`Device1.Disconnected` reason, or none).
    public enum LinkLossReason: Sendable, Equatable {
        /// The link timed out (out of range, interference).
        case timeout
        /// `Connected` went false and BlueZ gave no reason.
        case unspecified
        /// The speaker ended it: switched off, or another device took it.
        case remote
        /// Someone on this machine disconnected it (e.g. `bluetoothctl disconnect`).
        case local
    }

    /// Everything that can change the decision.
    public enum Event: Sendable, Equatable {
        case connected
        case connectFailed
        case linkLost(LinkLossReason)
        case unreachableAtBoot
        /// The device appeared on the bus, an RSSI was seen, or the adapter was powered.
        case deviceSeen
        case userDisconnected
        /// An attempt's `Pair` was refused (see `BlueZError.pairingRefusal`).
        case pairingRefused
        case userAskedToConnect
        /// The speaker was forgotten or replaced: nothing to keep connected.
        case targetCleared
        /// logind `PrepareForSleep(true)`.
        case preparingForSleep
        /// logind `PrepareForSleep(false)`.
        case resumedFromSleep
        /// A timer armed by an earlier `.retry(after:)` fired.
        case retryDue
        /// A person's request began waiting for the speaker (a `play` while it is out of reach):
        /// try it now rather than wait out a long backoff, and every `requestSpacing` while any
        /// request waits.
        case requestWaiting
        /// A request that waited has its answer (played, failed or timed out).
        case requestEnded
    }

    /// What the caller must do next.
    public enum Action: Sendable, Equatable {
        case none
        case connectNow
        /// Arm a timer; deliver `.retryDue` when it fires. Replaces any earlier timer.
        case retry(after: Duration)
        case cancelRetry
    }

    /// Which backoff schedule a run of attempts follows.
    public enum Mode: Sendable, Equatable {
        case eager
        case gentle
    }

    /// What to do once the machine wakes up.
    public enum WakeIntent: Sendable, Equatable {
        case reconnect
        case stayHeld
        case stayNeedingPairing
        case nothing
    }

    public enum State: Sendable, Equatable {
        /// No speaker to keep connected.
        case idle
        case connecting(Mode, attempt: Int)
        case connected
        case waiting(Mode, attempt: Int, retryAt: C.Instant)
        /// The user disconnected: no attempt until they ask.
        case heldByUser
        /// The speaker would not pair: no attempt until the user asks (once it is in pairing mode).
        case needsPairing
        case asleep(WakeIntent)
    }

    public private(set) var state: State = .idle
    private var lastAttemptAt: C.Instant?
    /// Requests waiting for the speaker now: while there are any, no retry is further off than
    /// `requestSpacing`.
    private var waitingRequests = 0
    private var random: any RandomNumberGenerator & Sendable
    private let eager: ReconnectSchedule
    private let gentle: ReconnectSchedule
    /// Shortest gap between two attempts in eager mode (a burst of RSSI updates is one event).
    public var minimumEagerSpacing: Duration = .seconds(1)
    /// Shortest gap between two attempts after the speaker ended the link.
    public var minimumGentleSpacing: Duration = .seconds(15)
    /// Shortest gap between two attempts a waiting request asks for: a speaker switched on
    /// is found within a few seconds, and a speaker that stays off is not paged back to back.
    public var requestSpacing: Duration = .seconds(3)
    /// Delay after resume before reconnecting: the adapter needs a moment to come back.
    public var resumeDelay: Duration = .seconds(2)

    public init(random: some RandomNumberGenerator & Sendable, cap: Duration = .seconds(60)) {
        self.random = random
        self.eager = .eager(cap: cap)
        self.gentle = .gentle(cap: cap)
    }

    public mutating func handle(_ event: Event, now: C.Instant) -> Action {
        switch (event, state) {
        case (.connected, _):
            state = .connected
            return .cancelRetry
        case (.userAskedToConnect, _):
            return startAttempt(.eager, attempt: 0, now: now)
        case (.userDisconnected, _), (.linkLost(.local), _):
            if case .asleep = state { state = .asleep(.stayHeld) } else { state = .heldByUser }
            return .cancelRetry
        case (.pairingRefused, _):
            if case .asleep = state { state = .asleep(.stayNeedingPairing) } else { state = .needsPairing }
            return .cancelRetry
        case (.targetCleared, _):
            state = .idle
            return .cancelRetry
        case (.preparingForSleep, _):
            state = .asleep(Self.wakeIntent(for: state))
            return .cancelRetry
        case (.resumedFromSleep, .asleep(let intent)):
            return wake(intent, now: now)
        case (.resumedFromSleep, _):
            // PrepareForSleep(true) was missed; behave as if it had been seen.
            return wake(Self.wakeIntent(for: state), now: now)

        case (.linkLost, .asleep):
            // What it wakes to was settled as it fell asleep (a speaker it was keeping is
            // reconnected): a link lost meanwhile changes that only when this machine ended it
            // (`.local`, above). A user's disconnect and a refused pairing still hold.
            return .none
        case (.linkLost, .idle), (.linkLost, .heldByUser), (.linkLost, .needsPairing):
            return .none
        case (.linkLost(let reason), .connected):
            return scheduleRetry(Self.mode(for: reason), attempt: 0, now: now)
        case (.linkLost(let reason), .connecting(_, let attempt)), (.linkLost(let reason), .waiting(_, let attempt, _)):
            return scheduleRetry(Self.mode(for: reason), attempt: attempt + 1, now: now)

        case (.connectFailed, .connecting(let mode, let attempt)):
            return scheduleRetry(mode, attempt: attempt + 1, now: now)
        case (.connectFailed, _):
            return .none

        case (.unreachableAtBoot, .idle), (.unreachableAtBoot, .connecting):
            return scheduleRetry(.eager, attempt: 0, now: now)
        case (.unreachableAtBoot, _):
            return .none

        case (.deviceSeen, .waiting(let mode, let attempt, let retryAt)):
            return deviceSeen(mode: mode, attempt: attempt, retryAt: retryAt, now: now)
        case (.deviceSeen, _):
            return .none

        case (.requestWaiting, .waiting(let mode, let attempt, let retryAt)):
            waitingRequests += 1
            return requestWaiting(mode: mode, attempt: attempt, retryAt: retryAt, now: now)
        case (.requestWaiting, _):
            waitingRequests += 1
            return .none  // connecting already, connected, held by the user, asleep or no speaker
        case (.requestEnded, _):
            waitingRequests = max(0, waitingRequests - 1)
            return .none

        case (.retryDue, .waiting(let mode, let attempt, let retryAt)):
            guard now >= retryAt else { return .none }  // a stale timer from an earlier schedule
            return startAttempt(mode, attempt: attempt, now: now)
        case (.retryDue, _):
            return .none
        }
    }

    // MARK: - Transitions

    private mutating func startAttempt(_ mode: Mode, attempt: Int, now: C.Instant) -> Action {
        state = .connecting(mode, attempt: attempt)
        lastAttemptAt = now
        return .connectNow
    }

    private mutating func scheduleRetry(_ mode: Mode, attempt: Int, now: C.Instant) -> Action {
        let schedule = mode == .eager ? eager : gentle
        var delay = schedule.delay(forAttempt: attempt, using: &random)
        if waitingRequests > 0 { delay = min(delay, requestSpacing) }
        state = .waiting(mode, attempt: attempt, retryAt: now.advanced(by: delay))
        return .retry(after: delay)
    }

    private mutating func deviceSeen(mode: Mode, attempt: Int, retryAt: C.Instant, now: C.Instant) -> Action {
        let spacing = mode == .eager ? minimumEagerSpacing : minimumGentleSpacing
        let earliest = lastAttemptAt.map { $0.advanced(by: spacing) } ?? now
        if earliest <= now { return startAttempt(mode, attempt: attempt, now: now) }
        guard earliest < retryAt else { return .none }  // the armed timer is already sooner
        state = .waiting(mode, attempt: attempt, retryAt: earliest)
        return .retry(after: now.duration(to: earliest))
    }

    /// A request began waiting: an attempt now unless one began within `minimumEagerSpacing`
    /// (a burst of requests is one), else one at the end of that spacing if the armed timer is
    /// later. While it waits, failed attempts are retried every `requestSpacing`; once nobody
    /// waits, the backoff goes on from the attempts made.
    private mutating func requestWaiting(mode: Mode, attempt: Int, retryAt: C.Instant, now: C.Instant) -> Action {
        let earliest = lastAttemptAt.map { $0.advanced(by: minimumEagerSpacing) } ?? now
        if earliest <= now { return startAttempt(mode, attempt: attempt, now: now) }
        guard earliest < retryAt else { return .none }
        state = .waiting(mode, attempt: attempt, retryAt: earliest)
        return .retry(after: now.duration(to: earliest))
    }

    private mutating func wake(_ intent: WakeIntent, now: C.Instant) -> Action {
        switch intent {
        case .stayHeld:
            state = .heldByUser
            return .none
        case .stayNeedingPairing:
            state = .needsPairing
            return .none
        case .nothing:
            state = .idle
            return .none
        case .reconnect:
            state = .waiting(.eager, attempt: 0, retryAt: now.advanced(by: resumeDelay))
            return .retry(after: resumeDelay)
        }
    }

    private static func wakeIntent(for state: State) -> WakeIntent {
        switch state {
        case .idle: .nothing
        case .heldByUser: .stayHeld
        case .needsPairing: .stayNeedingPairing
        case .asleep(let intent): intent
        case .connected, .connecting, .waiting: .reconnect
        }
    }

    private static func mode(for reason: LinkLossReason) -> Mode {
        reason == .remote ? .gentle : .eager
    }
}
