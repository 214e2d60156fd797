/// The shape of a start-up scenario, computed without running it.
///
/// Operations are laid out in waves: wave 0 has no dependencies, and each later operation sits
/// one wave after its deepest dependency. With maximum parallelism and equal durations the
/// operations of a wave run together; in any case an operation never waits for one it does not
/// (transitively) depend on. Tests assert scenarios with ``waits(_:for:)`` and
/// ``mayRunInParallel(_:_:)``.
public struct StartupPlan: Sendable, Hashable {
    /// The scenario's name.
    public let scenario: String
    /// Operation names by wave, each wave in declaration order.
    public let waves: [[String]]
    private let ancestors: [String: Set<String>]

    init(scenario: String, graph: StartupGraph) {
        self.scenario = scenario
        var depth = Array(repeating: 0, count: graph.count)
        var ancestorSets = Array(repeating: Set<Int>(), count: graph.count)
        for index in graph.order {
            for dependency in graph.dependencies[index] {
                depth[index] = max(depth[index], depth[dependency] + 1)
                ancestorSets[index].insert(dependency)
                ancestorSets[index].formUnion(ancestorSets[dependency])
            }
        }
        let waveCount = (depth.max() ?? -1) + 1
        var waves = Array(repeating: [String](), count: waveCount)
        for index in 0..<graph.count { waves[depth[index]].append(graph.steps[index].name) }
        self.waves = waves
        var ancestors: [String: Set<String>] = [:]
        for index in 0..<graph.count {
            ancestors[graph.steps[index].name] = Set(ancestorSets[index].map { graph.steps[$0].name })
        }
        self.ancestors = ancestors
    }

    /// The wave `operation` is in, or `nil` if it is not in the plan.
    public func wave(of operation: String) -> Int? {
        waves.firstIndex { $0.contains(operation) }
    }

    /// Whether `operation` cannot start before `other` has finished (directly or transitively).
    public func waits(_ operation: String, for other: String) -> Bool {
        ancestors[operation]?.contains(other) ?? false
    }

    /// Whether neither operation waits for the other, so they can run at the same time.
    public func mayRunInParallel(_ first: String, _ second: String) -> Bool {
        first != second && !waits(first, for: second) && !waits(second, for: first)
    }

    /// Everything `operation` waits for, directly or transitively.
    public func prerequisites(of operation: String) -> Set<String> { ancestors[operation] ?? [] }
}
