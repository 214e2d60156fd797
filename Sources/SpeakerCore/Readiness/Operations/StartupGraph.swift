/// A validated start-up graph: operations by index, their dependencies and dependents.
///
/// Validation happens here, once, before anything runs: duplicate names, dependencies that do
/// not exist, and cycles are errors that name the culprits. The sequencer then works on integer
/// indices only, which keeps its per-operation overhead small.
struct StartupGraph: Sendable {
    let steps: [StartupStep]
    let indexByName: [String: Int]
    /// For each operation, the indices it waits for.
    let dependencies: [[Int]]
    /// For each operation, the indices waiting for it.
    let dependents: [[Int]]
    /// A topological order (every operation after its dependencies).
    let order: [Int]

    init(steps: [StartupStep]) throws(StartupGraphError) {
        var indexByName: [String: Int] = [:]
        indexByName.reserveCapacity(steps.count)
        for (index, step) in steps.enumerated() {
            guard indexByName.updateValue(index, forKey: step.name) == nil else {
                throw .duplicateOperation(step.name)
            }
        }
        var dependencies: [[Int]] = []
        dependencies.reserveCapacity(steps.count)
        var dependents = Array(repeating: [Int](), count: steps.count)
        // `lastListedBy[d] == index` means `index` already lists `d`: duplicates are dropped in
        // O(1) each, so a dense graph (every operation of one wave waiting for all of the
        // previous) validates in time linear in its edges.
        var lastListedBy = Array(repeating: -1, count: steps.count)
        for (index, step) in steps.enumerated() {
            var mine: [Int] = []
            mine.reserveCapacity(step.dependencies.count)
            for name in step.dependencies {
                guard let dependency = indexByName[name] else {
                    throw .missingDependency(operation: step.name, dependency: name)
                }
                guard lastListedBy[dependency] != index else { continue }
                lastListedBy[dependency] = index
                mine.append(dependency)
                dependents[dependency].append(index)
            }
            dependencies.append(mine)
        }
        self.steps = steps
        self.indexByName = indexByName
        self.dependencies = dependencies
        self.dependents = dependents
        order = try Self.topologicalOrder(steps: steps, dependencies: dependencies)
    }

    var count: Int { steps.count }

    /// Depth-first search with three colours; meeting a grey node again is a cycle, which is
    /// reported from its first occurrence on the current path, so the message names exactly
    /// the operations in the loop.
    private static func topologicalOrder(steps: [StartupStep], dependencies: [[Int]]) throws(StartupGraphError) -> [Int] {
        enum Colour { case white, grey, black }
        var colour = Array(repeating: Colour.white, count: steps.count)
        var order: [Int] = []
        order.reserveCapacity(steps.count)
        var path: [Int] = []
        // An explicit stack of (node, next dependency position) so a 10,000-long chain cannot
        // overflow the thread's stack.
        var stack: [(node: Int, next: Int)] = []
        for root in steps.indices where colour[root] == .white {
            stack.append((root, 0))
            colour[root] = .grey
            path.append(root)
            while let top = stack.last {
                let deps = dependencies[top.node]
                if top.next < deps.count {
                    stack[stack.count - 1].next += 1
                    let dependency = deps[top.next]
                    switch colour[dependency] {
                    case .white:
                        colour[dependency] = .grey
                        path.append(dependency)
                        stack.append((dependency, 0))
                    case .grey:
                        let start = path.lastIndex(of: dependency)!
                        // The path runs dependent → dependency; print it in "waits for" order.
                        let loop = path[start...].map { steps[$0].name }
                        throw .cycle(loop + [steps[dependency].name])
                    case .black:
                        break
                    }
                } else {
                    stack.removeLast()
                    path.removeLast()
                    colour[top.node] = .black
                    order.append(top.node)
                }
            }
        }
        return order
    }
}
