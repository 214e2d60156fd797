import Logging
import Readiness

/// Holds a logind sleep *delay* inhibitor while speakerd's operation queue has work, so that
/// a suspend does not cut a connect or a state write in half. When the lock is wanted is
/// ``SleepLockDecision``'s to decide; this runs it: the `Inhibit` call, the lock it returns and
/// its release, and the state's observers.
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

    private let provider: any SleepLockProviding
    private let why: String
    private let logger: Logger
    private var decision = SleepLockDecision()
    private var lock: SleepInhibitorLock?
    private var observers: [Int: AsyncStream<State>.Continuation] = [:]
    private var nextObserver = 0

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
    public var state: State { decision.state }

    /// The current state, then every change, until the observer stops iterating.
    public func states() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .unbounded)
        let id = nextObserver
        nextObserver += 1
        continuation.yield(decision.state)
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
        case .busy: await feed(.queue(busy: true))
        case .drained: await feed(.queue(busy: false))
        case .started, .finished: return
        }
    }

    /// Applies one sleep event: release before sleeping, take again after resume if still busy.
    public func handle(_ event: SleepEvent) async {
        await feed(.preparingForSleep(event == .preparingForSleep))
    }

    /// Releases any lock and ends the state streams (daemon shutdown).
    public func shutdown() async {
        await feed(.shutdown)
        for continuation in observers.values { continuation.finish() }
        observers.removeAll()
    }

    private func feed(_ event: SleepLockDecision.Event) async {
        for effect in decision.step(event) {
            switch effect {
            case .acquire:
                // Other events meanwhile find the decision acquiring and wait for this answer.
                let answer: SleepLockDecision.Event
                do {
                    lock = try await provider.inhibitDelay(why: why)
                    answer = .acquired
                } catch .notRunning {
                    answer = .acquireFailed(reason: LogindError.notRunning.description, logindMissing: true)
                } catch {
                    answer = .acquireFailed(reason: error.description, logindMissing: false)
                }
                await feed(answer)
            case .release:
                lock?.release()
                lock = nil
            case .announce(let state):
                announce(state)
            case let .log(level, line):
                logger.log(level: level, "\(line)", metadata: level == .debug ? ["why": "\(why)"] : nil)
            }
        }
    }

    private func announce(_ state: State) {
        for continuation in observers.values { continuation.yield(state) }
    }

    private func removeObserver(_ id: Int) {
        observers[id] = nil
    }
}
