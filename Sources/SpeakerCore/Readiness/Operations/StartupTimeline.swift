import AsyncSignals
/// What happened during one start-up: every operation's start and end (milliseconds on the
/// monotonic clock since the sequence began), its outcome, and the critical path.
///
/// Printed by `composer-cli startup --json`; the keys `operations`, `name`, `startMs`, `endMs`
/// and `outcome` are a stable contract.
public struct StartupTimeline: Sendable, Hashable, Codable {
    public struct Entry: Sendable, Hashable, Codable {
        public var name: String
        public var startMs: Double
        public var endMs: Double
        public var outcome: OperationOutcome
        public var dependencies: [String]

        public init(name: String, startMs: Double, endMs: Double, outcome: OperationOutcome, dependencies: [String]) {
            self.name = name
            self.startMs = startMs
            self.endMs = endMs
            self.outcome = outcome
            self.dependencies = dependencies
        }

        private enum CodingKeys: String, CodingKey {
            case name, startMs, endMs, outcome, reason, dependencies
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            startMs = try container.decode(Double.self, forKey: .startMs)
            endMs = try container.decode(Double.self, forKey: .endMs)
            dependencies = try container.decodeIfPresent([String].self, forKey: .dependencies) ?? []
            let kind = try container.decode(String.self, forKey: .outcome)
            let reason = try container.decodeIfPresent(String.self, forKey: .reason)
            guard let outcome = OperationOutcome(kind: kind, reason: reason) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .outcome, in: container, debugDescription: "unknown outcome '\(kind)'"
                )
            }
            self.outcome = outcome
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(startMs, forKey: .startMs)
            try container.encode(endMs, forKey: .endMs)
            try container.encode(outcome.kind, forKey: .outcome)
            try container.encodeIfPresent(outcome.reason, forKey: .reason)
            try container.encode(dependencies, forKey: .dependencies)
        }
    }

    public var scenario: String
    /// Every operation, in declaration order.
    public var operations: [Entry]
    /// The chain of operations that decided the total time, first to last.
    public var criticalPath: [String]
    public var totalMs: Double
    /// Why the sequence was aborted, if it was.
    public var abortReason: String?
    public var budgetMs: Double?
    public var budgetExceeded: Bool

    public init(
        scenario: String, operations: [Entry], criticalPath: [String], totalMs: Double,
        abortReason: String?, budgetMs: Double?, budgetExceeded: Bool
    ) {
        self.scenario = scenario
        self.operations = operations
        self.criticalPath = criticalPath
        self.totalMs = totalMs
        self.abortReason = abortReason
        self.budgetMs = budgetMs
        self.budgetExceeded = budgetExceeded
    }

    /// The entry for `name`, if the timeline has one.
    public func entry(_ name: String) -> Entry? { operations.first { $0.name == name } }

    /// Whether every operation ran to `ok` (optional failures make this false too).
    public var allSucceeded: Bool { abortReason == nil && operations.allSatisfy { $0.outcome == .ok } }

    /// Walks back from the operation that ended last, each time to the dependency that ended
    /// last (the one that actually held it up). Ties (common with a test clock) go to the
    /// operation later in topological order, i.e. the downstream one.
    static func criticalPath(of entries: [Entry], dependencies: [[Int]], topologicalOrder: [Int]) -> [String] {
        var rank = Array(repeating: 0, count: entries.count)
        for (position, index) in topologicalOrder.enumerated() { rank[index] = position }
        func later(_ lhs: Int, _ rhs: Int) -> Bool {
            (entries[lhs].endMs, rank[lhs]) < (entries[rhs].endMs, rank[rhs])
        }
        guard var current = entries.indices.max(by: later) else { return [] }
        var path = [entries[current].name]
        while let gate = dependencies[current].max(by: later) {
            path.append(entries[gate].name)
            current = gate
        }
        return path.reversed()
    }
}
