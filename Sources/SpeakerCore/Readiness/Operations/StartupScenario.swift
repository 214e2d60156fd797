/// Whether a start-up operation's failure stops the whole sequence.
public enum StartupRequirement: String, Sendable, Hashable, Codable {
    /// Its failure (or timeout) aborts the sequence: the rest is cancelled.
    case required
    /// Its failure skips only the operations that depend on it.
    case optional
}

/// One step of a start-up scenario: a name, what it waits for, and how much it matters.
public struct StartupStep: Sendable, Hashable {
    public var name: String
    public var dependencies: [String]
    public var requirement: StartupRequirement
    /// `nil` takes the sequencer's default timeout.
    public var timeout: Duration?

    public init(
        _ name: String,
        after dependencies: [String] = [],
        _ requirement: StartupRequirement = .required,
        timeout: Duration? = nil
    ) {
        self.name = name
        self.dependencies = dependencies
        self.requirement = requirement
        self.timeout = timeout
    }
}

/// A start-up graph described as data: which steps exist and what each waits for.
///
/// An owner declares one per situation (e.g. first run, regular, launched by a request), so tests
/// can assert each scenario's shape through ``plan()`` without running anything, and the
/// sequencer runs the very same description.
public struct StartupScenario: Sendable, Hashable {
    public var name: String
    public var steps: [StartupStep]

    public init(_ name: String, steps: [StartupStep]) {
        self.name = name
        self.steps = steps
    }

    /// Validates the graph and lays it out in waves; throws if a dependency is missing or cyclic.
    public func plan() throws(StartupGraphError) -> StartupPlan {
        let graph = try StartupGraph(steps: steps)
        return StartupPlan(scenario: name, graph: graph)
    }
}
