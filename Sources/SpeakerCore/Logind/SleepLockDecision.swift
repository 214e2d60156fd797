import Logging

/// When speakerd holds a logind sleep delay lock, decided in one synchronous step: exactly while
/// its operation queue is busy and the system is not preparing to sleep. A value:
/// ``SleepInhibitor`` feeds it the queue's and logind's events and runs its effects (the
/// `Inhibit` call and the lock's release).
///
/// On `PrepareForSleep(true)` the lock goes at once: a delay lock only buys time up to logind's
/// `InhibitDelayMaxSec`, and by the time the signal arrives in-flight work has had the period
/// since `busy` to finish; holding on longer would only delay the user's suspend. After resume
/// the lock is taken again if the queue is still busy. Where logind does not exist the state is
/// ``SleepInhibitor/State/unavailable(_:)`` until the next `busy`, which tries again (logind may
/// have started meanwhile); why is logged once, not on every try.
public struct SleepLockDecision: Equatable, Sendable {
    public enum Event: Equatable, Sendable {
        /// The operation queue has work (`busy`) or none (`drained`).
        case queue(busy: Bool)
        /// logind's `PrepareForSleep`: true before the system sleeps, false after it resumes.
        case preparingForSleep(Bool)
        /// `Inhibit` answered with a lock.
        case acquired
        /// `Inhibit` failed; `logindMissing`: logind is not on the bus.
        case acquireFailed(reason: String, logindMissing: Bool)
        /// The daemon shuts down: any lock goes, none is taken again.
        case shutdown
    }

    public enum Effect: Equatable, Sendable {
        /// Call `Inhibit`; answered by `acquired` or `acquireFailed`.
        case acquire
        case release
        case log(Logger.Level, String)
        /// The state changed (observers see every state it passes through, a lock taken and at
        /// once given back included).
        case announce(SleepInhibitor.State)
    }

    public private(set) var state = SleepInhibitor.State.idle
    private var queueBusy = false
    private var preparingForSleep = false
    private var stopped = false
    /// The last unavailability logged; cleared once a lock is taken, so a new outage is told.
    private var loggedUnavailability: String?

    public init() {}

    private var wanted: Bool { queueBusy && !preparingForSleep && !stopped }

    public mutating func step(_ event: Event) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case .queue(let busy):
            queueBusy = busy
            if busy, case .unavailable = state { set(.idle, into: &effects) }  // logind may have appeared since
        case .preparingForSleep(let preparing):
            preparingForSleep = preparing
        case .acquired:
            guard state == .acquiring else {
                // Nothing asked for it any more (shut down meanwhile): it goes at once.
                effects.append(.release)
                return effects
            }
            set(.held, into: &effects)
            loggedUnavailability = nil
            effects.append(.log(.debug, "holding a sleep delay lock"))
        case let .acquireFailed(reason, logindMissing):
            guard state == .acquiring else { return effects }
            set(.unavailable(reason), into: &effects)
            if loggedUnavailability != reason {
                loggedUnavailability = reason
                effects.append(logindMissing
                    ? .log(.info, "no logind on the bus: suspend will not wait for speaker operations")
                    : .log(.warning, "could not take a sleep delay lock: \(reason)"))
            }
            return effects
        case .shutdown:
            queueBusy = false
            stopped = true
            if state == .held {
                effects.append(.release)
                effects.append(.log(.debug, "released the sleep delay lock (shutting down)"))
            }
            // A lock still being asked for is released when it comes (`acquired` above).
            set(.idle, into: &effects)
            return effects
        }
        switch state {
        case .held where !wanted:
            effects.append(.release)
            set(.idle, into: &effects)
            effects.append(.log(.debug, "released the sleep delay lock (\(preparingForSleep ? "system preparing for sleep" : "queue drained"))"))
        case .idle where wanted:
            set(.acquiring, into: &effects)
            effects.append(.acquire)
        default:
            break
        }
        return effects
    }

    private mutating func set(_ new: SleepInhibitor.State, into effects: inout [Effect]) {
        guard new != state else { return }
        state = new
        effects.append(.announce(new))
    }
}
