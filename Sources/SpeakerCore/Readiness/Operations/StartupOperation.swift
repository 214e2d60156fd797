/// A start-up operation: a ``StartupStep`` (name, dependencies, requirement, timeout) plus the
/// work to run.
public struct StartupOperation: Sendable {
    public typealias Body = @Sendable (StartupContext) async throws -> Void

    public var step: StartupStep
    public var body: Body

    public init(
        _ name: String,
        after dependencies: [String] = [],
        _ requirement: StartupRequirement = .required,
        timeout: Duration? = nil,
        run body: @escaping Body
    ) {
        step = StartupStep(name, after: dependencies, requirement, timeout: timeout)
        self.body = body
    }

    public init(step: StartupStep, body: @escaping Body) {
        self.step = step
        self.body = body
    }
}

/// What a running start-up operation knows about itself.
public struct StartupContext: Sendable {
    /// The operation's name.
    public let name: String

    /// Made by the sequencer for each run; public so an operation's body can be tested alone.
    public init(name: String) { self.name = name }

    /// The error to throw to abort the whole sequence, e.g.
    /// `throw context.abort("no device to talk to: plug one in")`.
    public func abort(_ reason: String) -> StartupAbort { StartupAbort(reason) }
}

/// Thrown by a start-up operation to abort the whole sequence: everything still running is
/// cancelled, nothing else starts, and the reason is kept in the timeline.
///
/// This is the seeds' "force update" gate: when a prerequisite is missing (a service not
/// running, hardware absent or switched off), nothing after it can succeed, so the owner stops
/// trying and says why.
public struct StartupAbort: Error, Hashable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}

/// What a ``StartupSequencer`` reports while it runs (the daemon turns these into `STATUS=`).
public enum StartupEvent: Sendable, Hashable, CustomStringConvertible {
    case started(String)
    case finished(String, OperationOutcome)
    /// The budget elapsed with these operations still running or waiting.
    case budgetExceeded(budget: Duration, unfinished: [String])
    case aborted(reason: String)

    public var description: String {
        switch self {
        case let .started(name): "started \(name)"
        case let .finished(name, outcome): "finished \(name): \(outcome)"
        case let .budgetExceeded(budget, unfinished):
            "start-up exceeded its \(budget) budget; still unfinished: \(unfinished.joined(separator: ", "))"
        case let .aborted(reason): "start-up aborted: \(reason)"
        }
    }
}
