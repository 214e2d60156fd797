import AsyncSignals
import DequeModule
import Logging

/// Runs named async operations with timeouts, uniqueness by name, sequential groups and a
/// concurrency limit, and reports when it goes busy and when it drains.
///
/// Backgroundable's operation queue, rebuilt on Swift concurrency. An operation finishes by
/// returning (or throwing), or, for callback-style work, by an explicit
/// ``OperationContext/finish()``. Each has a timeout (10 s by default) after which its
/// `onTimeout` callback runs and its work is cancelled. Operations in the same `group` run one
/// after another in the order added; others run side by side up to `maxConcurrentOperations`.
public actor AsyncOperationQueue {
    /// Whether the queue takes new work.
    private enum Lifecycle {
        case accepting
        case shutDown
    }

    struct Queued {
        let context: OperationContext
        let group: String?
        let timeout: Duration?
        let completion: OperationCompletion
        let onTimeout: (@Sendable (String) -> Void)?
        let work: @Sendable (OperationContext) async throws -> Void
    }

    struct Running {
        let queued: Queued
        let workTask: Task<Void, Never>
        let timerTask: Task<Void, Never>?
    }

    /// The queue's name, used in log lines.
    public nonisolated let name: String
    /// At most this many operations run at once.
    public nonisolated let maxConcurrentOperations: Int
    /// The timeout of operations added without one; `nil` means none.
    public nonisolated let defaultTimeout: Duration?
    nonisolated let clock: any Clock<Duration>
    nonisolated let logger: Logger
    nonisolated let eventBroadcaster = Broadcaster<QueueEvent>()

    private var lifecycle = Lifecycle.accepting
    private var nextID: UInt64 = 0
    var pending: Deque<Queued> = []
    var running: [OperationID: Running] = [:]
    private var busyGroups: Set<String> = []
    /// Names whose last run timed out, so a retry timing out alike is not logged again.
    private var timedOutNames: Set<String> = []
    /// `drained` was announced since the last `busy` (so it is said once per idle period).
    private var saidDrained = true

    public init(
        name: String = "operations",
        maxConcurrentOperations: Int = 4,
        defaultTimeout: Duration? = .seconds(10),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "operations")
    ) {
        self.name = name
        self.maxConcurrentOperations = max(1, maxConcurrentOperations)
        self.defaultTimeout = defaultTimeout
        self.clock = clock
        self.logger = logger
    }

    /// Every later event: busy, started, finished, drained.
    public nonisolated func events() -> AsyncStream<QueueEvent> { eventBroadcaster.subscribe() }

    /// Whether anything is queued or running.
    public var isBusy: Bool { !pending.isEmpty || !running.isEmpty }
    /// Names of the operations running now; for tests.
    var runningNames: [String] { running.values.map(\.queued.context.name).sorted() }
    /// How many operations wait for a slot or for their group; for tests.
    var pendingCount: Int { pending.count }

    /// Adds an operation.
    ///
    /// - Parameters:
    ///   - name: names the operation in events and logs, and for `uniqueness`.
    ///   - uniqueness: what happens if an operation with this name is queued or running.
    ///   - group: operations sharing a group run one at a time, in the order added.
    ///   - timeout: overrides the queue's default timeout.
    ///   - completion: whether returning from `work` finishes the operation.
    ///   - onTimeout: called with the name when the operation times out (its work is cancelled).
    /// - Returns: a ticket to await the outcome; a dropped duplicate's outcome is `skipped`.
    @discardableResult
    public func add(
        _ name: String,
        uniqueness: OperationUniqueness = .allowBoth,
        group: String? = nil,
        timeout: Duration? = nil,
        completion: OperationCompletion = .onReturn,
        onTimeout: (@Sendable (String) -> Void)? = nil,
        _ work: @escaping @Sendable (OperationContext) async throws -> Void
    ) -> OperationTicket {
        let id = OperationID(rawValue: nextID)
        nextID += 1
        let context = OperationContext(name: name, id: id, clock: clock)
        let ticket = OperationTicket(id: id, name: name, completion: context.booked)

        guard case .accepting = lifecycle else {
            skip(context, because: "the queue \(self.name) is shut down")
            return ticket
        }
        var replaced: Set<OperationID> = []
        switch uniqueness {
        case .allowBoth:
            break
        case .drop:
            if hasOperation(named: name) {
                skip(context, because: "an operation named \(name) is already queued or running")
                return ticket
            }
        case .replace:
            replaced = Set(pending.filter { $0.context.name == name }.map(\.context.id))
            replaced.formUnion(running.values.filter { $0.queued.context.name == name }.map(\.queued.context.id))
        }
        if !isBusy {
            saidDrained = false
            eventBroadcaster.publish(.busy)
        }
        pending.append(Queued(
            context: context, group: group, timeout: timeout ?? defaultTimeout,
            completion: completion, onTimeout: onTimeout, work: work
        ))
        // Cancel what is replaced only once the new operation is queued, so the queue never
        // looks drained in between (which would drop and retake the sleep inhibitor).
        if !replaced.isEmpty { cancelOperations { replaced.contains($0.context.id) } }
        startWhatCanRun()
        return ticket
    }

    /// Cancels every queued or running operation with this name.
    public func cancel(named name: String) { cancelOperations { $0.context.name == name } }

    /// Cancels one operation.
    public func cancel(_ id: OperationID) { cancelOperations { $0.context.id == id } }

    /// Cancels everything queued or running.
    public func cancelAll() { cancelOperations { _ in true } }

    /// Cancels everything and refuses new work (new operations are skipped).
    public func shutDown() {
        lifecycle = .shutDown
        cancelAll()
    }

    private func hasOperation(named name: String) -> Bool {
        pending.contains { $0.context.name == name } || running.values.contains { $0.queued.context.name == name }
    }

    // MARK: - Scheduling

    /// Starts queued operations, oldest first, while slots are free and their group is idle.
    func startWhatCanRun() {
        var index = pending.startIndex
        while running.count < maxConcurrentOperations, index < pending.endIndex {
            let candidate = pending[index]
            if let group = candidate.group, busyGroups.contains(group) {
                index += 1
                continue
            }
            pending.remove(at: index)
            if let group = candidate.group { busyGroups.insert(group) }
            start(candidate)
        }
    }

    /// Removes matching operations: queued ones end at once, running ones are cancelled.
    private func cancelOperations(where matches: (Queued) -> Bool) {
        let cancelledQueued = pending.filter(matches)
        pending.removeAll(where: matches)
        for queued in cancelledQueued {
            queued.context.completion.succeed(.cancelled)
            queued.context.booked.succeed(.cancelled)
            eventBroadcaster.publish(.finished(name: queued.context.name, id: queued.context.id, outcome: .cancelled))
        }
        for (id, run) in running where matches(run.queued) {
            if run.queued.context.completion.succeed(.cancelled) { operationEnded(id, .cancelled) }
        }
        if !cancelledQueued.isEmpty { noteIfDrained() }
    }

    /// Books the end of a running operation (idempotent), then fills the freed slot.
    func operationEnded(_ id: OperationID, _ outcome: OperationOutcome) {
        guard let run = running.removeValue(forKey: id) else { return }
        run.workTask.cancel()
        run.timerTask?.cancel()
        if let group = run.queued.group { busyGroups.remove(group) }
        noteTimeout(run.queued, outcome)
        eventBroadcaster.publish(.finished(name: run.queued.context.name, id: id, outcome: outcome))
        startWhatCanRun()
        noteIfDrained()
        run.queued.context.booked.succeed(outcome)
    }

    /// Logs a timeout once per name until that operation next succeeds: a connect retried
    /// while the other side hangs is one warning, not one per retry.
    private func noteTimeout(_ queued: Queued, _ outcome: OperationOutcome) {
        let name = queued.context.name
        switch outcome {
        case .timedOut:
            guard timedOutNames.insert(name).inserted else { return }
            let after = queued.timeout.map { " after \($0)" } ?? ""
            logger.warning("operation \(name) timed out\(after); cancelling it (said once until it next succeeds)")
        case .ok:
            timedOutNames.remove(name)
        default:
            break
        }
    }

    /// Ends an operation that never ran.
    private func skip(_ context: OperationContext, because reason: String) {
        let outcome = OperationOutcome.skipped(reason)
        context.completion.succeed(outcome)
        context.booked.succeed(outcome)
        eventBroadcaster.publish(.finished(name: context.name, id: context.id, outcome: outcome))
    }

    private func noteIfDrained() {
        guard !isBusy, !saidDrained else { return }
        saidDrained = true
        eventBroadcaster.publish(.drained)
    }
}
