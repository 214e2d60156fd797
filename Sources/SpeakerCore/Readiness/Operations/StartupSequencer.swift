import AsyncSignals
import HeapModule
import Logging

/// Runs a start-up graph with maximum parallelism and records what happened.
///
/// Every operation starts the moment its last dependency finishes `ok`. An optional operation's
/// failure (or timeout) skips only the operations that depend on it; a required one's failure,
/// or any operation throwing ``StartupAbort``, aborts the sequence: whatever runs is cancelled,
/// nothing else starts, and the reason is kept. Each operation has a timeout on the injected
/// clock, and the whole sequence a budget (3 s for a start-up that needs no user input) whose
/// overrun is reported as it happens, not only afterwards.
///
/// Skipping is literal: a dependent of a failed optional operation is `skipped` even if it is
/// itself required; the sequence goes on with whatever does not need it (its owner then falls
/// back, e.g. from "reconnect the last device" to searching for one).
///
/// The graph is validated when the sequencer is made, so a bad graph never half-runs. While it
/// runs, the steps not yet started may be swapped for another scenario's (``revise(to:operations:budget:)``):
/// some facts that choose the scenario are known only once part of the graph has run.
public actor StartupSequencer {
    /// The budget of a start-up that needs no user input: a service started unattended should
    /// have done its start-up work within 3 s.
    public static let unattendedBudget: Duration = .seconds(3)

    enum Lifecycle {
        case idle
        case running
        case finished(StartupTimeline)
    }

    public internal(set) var scenarioName: String
    var graph: StartupGraph
    var bodies: [StartupOperation.Body]
    nonisolated let defaultTimeout: Duration?
    var budget: Duration?
    nonisolated let clock: any Clock<Duration>
    nonisolated let logger: Logger
    nonisolated let eventBroadcaster = Broadcaster<StartupEvent>()
    nonisolated let completion = OneShotSignal<StartupTimeline, Never>()

    private(set) var lifecycle = Lifecycle.idle
    var stopwatch: Stopwatch
    var remainingDependencies: [Int]
    var started: [Duration?]
    var ended: [Duration]
    var outcomes: [OperationOutcome?]
    var decidedCount = 0
    var bodyTasks: [Task<Void, Never>?]
    /// For each body started, in order, the graph index of its operation (see `spawnBody`).
    var slots: [Int] = []
    var deadlines = Heap<StartupDeadline>()
    var deadlineTimer: Task<Void, Never>?
    var timerTarget: Duration?
    var budgetTask: Task<Void, Never>?
    var abortReason: String?
    var budgetExceeded = false

    /// A sequencer for `operations`; throws if the graph is invalid (missing dependency, cycle,
    /// duplicate name).
    public init(
        _ scenarioName: String = "startup",
        operations: [StartupOperation],
        defaultTimeout: Duration? = .seconds(10),
        budget: Duration? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "startup")
    ) throws(StartupGraphError) {
        graph = try StartupGraph(steps: operations.map(\.step))
        bodies = operations.map(\.body)
        self.scenarioName = scenarioName
        self.defaultTimeout = defaultTimeout
        self.budget = budget
        self.clock = clock
        self.logger = logger
        stopwatch = Stopwatch(clock: clock)
        remainingDependencies = graph.dependencies.map(\.count)
        started = Array(repeating: nil, count: graph.count)
        ended = Array(repeating: .zero, count: graph.count)
        outcomes = Array(repeating: nil, count: graph.count)
        bodyTasks = Array(repeating: nil, count: graph.count)
    }

    /// A sequencer running `scenario`, with the work of each step taken from `operations` by name.
    public init(
        scenario: StartupScenario,
        operations: [String: StartupOperation.Body],
        defaultTimeout: Duration? = .seconds(10),
        budget: Duration? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "startup")
    ) throws(StartupGraphError) {
        var resolved: [StartupOperation] = []
        for step in scenario.steps {
            guard let body = operations[step.name] else { throw .missingBody(step.name) }
            resolved.append(StartupOperation(step: step, body: body))
        }
        try self.init(
            scenario.name, operations: resolved, defaultTimeout: defaultTimeout,
            budget: budget, clock: clock, logger: logger
        )
    }

    /// The graph laid out in waves, without running it.
    public func plan() -> StartupPlan { StartupPlan(scenario: scenarioName, graph: graph) }

    /// Operations starting and finishing, the budget overrun, an abort; ends when the run does.
    public nonisolated func events() -> AsyncStream<StartupEvent> { eventBroadcaster.subscribe() }

    /// Runs the sequence (once; later calls return the same timeline).
    ///
    /// Cancelling the calling task aborts the sequence ("start-up was cancelled") and still
    /// returns its timeline. That is the owner stopping, not a failure of start-up, so it is
    /// logged at debug level (an abort for a reason, `cancel(reason:)` included, is an error).
    public func run() async -> StartupTimeline {
        switch lifecycle {
        case let .finished(timeline):
            return timeline
        case .running:
            break
        case .idle:
            lifecycle = .running
            stopwatch = Stopwatch(clock: clock)
            if let budget { budgetTask = spawnBudgetTimer(budget) }
            for index in 0..<graph.count where remainingDependencies[index] == 0 {
                startOperation(index)
            }
            finishIfDone()
        }
        do {
            return try await completion.result().get()
        } catch {
            abort("start-up was cancelled", level: .debug)
            return completion.result!.get()
        }
    }

    /// Aborts the sequence from outside (e.g. SIGTERM during start-up).
    public func cancel(reason: String = "start-up was cancelled") {
        guard case .running = lifecycle else { return }
        abort(reason)
    }

    /// The timeline, once the sequence has finished.
    public var timeline: StartupTimeline? {
        if case let .finished(timeline) = lifecycle { timeline } else { nil }
    }

    // MARK: - Finishing

    func finishIfDone() {
        guard decidedCount == graph.count, case .running = lifecycle else { return }
        budgetTask?.cancel()
        disarmTimer()
        let total = stopwatch.elapsed()
        if let budget, total > budget, !budgetExceeded { reportBudgetExceeded(budget) }
        let entries = (0..<graph.count).map { index in
            StartupTimeline.Entry(
                name: graph.steps[index].name,
                startMs: (started[index] ?? ended[index]).milliseconds,
                endMs: ended[index].milliseconds,
                outcome: outcomes[index] ?? .cancelled,
                dependencies: graph.steps[index].dependencies
            )
        }
        let timeline = StartupTimeline(
            scenario: scenarioName,
            operations: entries,
            criticalPath: StartupTimeline.criticalPath(
                of: entries, dependencies: graph.dependencies, topologicalOrder: graph.order
            ),
            totalMs: total.milliseconds,
            abortReason: abortReason,
            budgetMs: budget?.milliseconds,
            budgetExceeded: budgetExceeded
        )
        lifecycle = .finished(timeline)
        completion.succeed(timeline)
        eventBroadcaster.finish()
    }

    func reportBudgetExceeded(_ budget: Duration) {
        budgetExceeded = true
        let unfinished = (0..<graph.count).filter { outcomes[$0] == nil }.map { graph.steps[$0].name }
        logger.warning(
            "start-up exceeded its \(budget) budget; still unfinished: \(unfinished.joined(separator: ", "))"
        )
        eventBroadcaster.publish(.budgetExceeded(budget: budget, unfinished: unfinished))
    }

    func budgetElapsed(_ budget: Duration) {
        guard case .running = lifecycle, !budgetExceeded else { return }
        reportBudgetExceeded(budget)
    }
}
