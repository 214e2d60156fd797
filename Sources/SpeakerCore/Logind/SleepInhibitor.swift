import Logging
import Readiness

/// Holds a logind sleep *delay* inhibitor while speakerd's operation queue has work, so that
/// a suspend does not cut a connect or a state write in half.
///
/// It wants the lock exactly while the queue is busy and the system is not preparing to sleep.
/// On `PrepareForSleep(true)` the lock is released at once: a delay lock only buys time up to
/// logind's `InhibitDelayMaxSec`, and by the time the signal arrives in-flight work has already
/// had the period since `busy` to finish; holding on longer would only delay the user's suspend.
/// After resume the lock is taken again if the queue is still busy.
///
/// Where logind does not exist the state becomes ``State/unavailable(_:)`` and every event is
/// a no-op until the next `busy`, which tries again (logind may have started meanwhile). Why
/// it is unavailable is logged once, not on every try: a machine without logind would
/// otherwise log a line for every connect.
public actor SleepInhibitor {
    /// The inhibitor's lifecycle, as observers see it.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// No lock, none wanted.
        case idle
        /// `Inhibit` has been called and has not answered yet.
        case acquiring
        /// A delay lock is held.
        case held
        /// logind is missing or refused; the reason is logged once per attempt.
        case unavailable(String)

        public var description: String {
            switch self {
            case .idle: "idle"
            case .acquiring: "acquiring"
            case .held: "held"
            case .unavailable(let why): "unavailable: \(why)"
            }
        }
    }

    private enum Holding {
        case idle
        case acquiring
        case held(SleepInhibitorLock)
        case unavailable(String)

        var state: State {
            switch self {
            case .idle: .idle
            case .acquiring: .acquiring
            case .held: .held
            case .unavailable(let why): .unavailable(why)
            }
        }
    }

    private let provider: any SleepLockProviding
    private let why: String
    private let logger: Logger
    private var holding: Holding = .idle
    private var queueBusy = false
    private var systemPreparingForSleep = false
    private var observers: [Int: AsyncStream<State>.Continuation] = [:]
    private var nextObserver = 0
    /// The last unavailability logged; cleared once a lock is taken, so a new outage is told.
    private var loggedUnavailability: String?

    public init(
        provider: any SleepLockProviding,
        why: String = "finishing speaker operations",
        logger: Logger = Logger(label: "speakerd.logind")
    ) {
        self.provider = provider
        self.why = why
        self.logger = logger
    }

    /// The current state.
    public var state: State { holding.state }

    /// The current state, then every change, until the observer stops iterating.
    public func states() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .unbounded)
        let id = nextObserver
        nextObserver += 1
        continuation.yield(holding.state)
        observers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    /// Follows `queue` until its event stream ends, starting from whether it is busy right now,
    /// so work queued before this call is covered too. Subscribing first and then reading
    /// `isBusy` can only repeat a `busy` or a `drained`, and both are idempotent here.
    public func follow(queue: AsyncOperationQueue) async {
        let events = queue.events()
        if await queue.isBusy { await handle(QueueEvent.busy) }
        await follow(events)
    }

    /// Follows the operation queue (`AsyncOperationQueue.events()`) until it ends.
    public func follow(_ queueEvents: some AsyncSequence<QueueEvent, Never>) async {
        for await event in queueEvents {
            await handle(event)
        }
    }

    /// Follows suspend and resume (`LogindClient.sleepEvents()`) until it ends.
    public func follow(sleepEvents: some AsyncSequence<SleepEvent, Never>) async {
        for await event in sleepEvents {
            await handle(event)
        }
    }

    /// Applies one queue event: `busy` wants the lock, `drained` gives it back.
    public func handle(_ event: QueueEvent) async {
        switch event {
        case .busy:
            queueBusy = true
            if case .unavailable = holding { set(.idle) }  // logind may have appeared since
        case .drained:
            queueBusy = false
        case .started, .finished:
            return
        }
        await reconcile()
    }

    /// Applies one sleep event: release before sleeping, take again after resume if still busy.
    public func handle(_ event: SleepEvent) async {
        systemPreparingForSleep = (event == .preparingForSleep)
        await reconcile()
    }

    /// Releases any lock and ends the state streams (daemon shutdown).
    public func shutdown() {
        queueBusy = false
        if case .held(let lock) = holding { lock.release() }
        set(.idle)
        for continuation in observers.values { continuation.finish() }
        observers.removeAll()
    }

    // MARK: - Reconciling

    /// Brings the lock in line with what is wanted. Re-entrant calls during an `Inhibit` call
    /// return at once; the acquirer re-checks when the reply is in.
    private func reconcile() async {
        while true {
            let wanted = queueBusy && !systemPreparingForSleep
            switch holding {
            case .acquiring, .unavailable:
                return
            case .held(let lock):
                guard !wanted else { return }
                lock.release()
                set(.idle)
                logger.debug("released the sleep delay lock", metadata: ["reason": "\(systemPreparingForSleep ? "system preparing for sleep" : "queue drained")"])
                return
            case .idle:
                guard wanted else { return }
                set(.acquiring)
                do {
                    let lock = try await provider.inhibitDelay(why: why)
                    set(.held(lock))
                    loggedUnavailability = nil
                    logger.debug("holding a sleep delay lock", metadata: ["why": "\(why)"])
                } catch .notRunning {
                    set(.unavailable(LogindError.notRunning.description))
                    if logOnce(LogindError.notRunning.description) {
                        logger.info("no logind on the bus: suspend will not wait for speaker operations")
                    }
                    return
                } catch {
                    set(.unavailable(error.description))
                    if logOnce(error.description) { logger.warning("could not take a sleep delay lock: \(error)") }
                    return
                }
            }
        }
    }

    /// True the first time in a row `reason` comes up.
    private func logOnce(_ reason: String) -> Bool {
        guard loggedUnavailability != reason else { return false }
        loggedUnavailability = reason
        return true
    }

    private func set(_ new: Holding) {
        let changed = new.state != holding.state
        holding = new
        guard changed else { return }
        for continuation in observers.values { continuation.yield(new.state) }
    }

    private func removeObserver(_ id: Int) {
        observers[id] = nil
    }
}
