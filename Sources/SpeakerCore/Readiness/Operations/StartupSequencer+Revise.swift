import HeapModule

extension StartupSequencer {
    /// Swaps the steps that have not started yet for those of `scenario`, mid-run.
    ///
    /// Why: some facts that choose a scenario are known only once part of the graph has run.
    /// A service activated on demand may be told nothing of the request that started it and
    /// learn that a call is waiting only partway through (once it owns its name on a bus).
    /// Whatever has started or finished is history and must stay as it was: every such step has
    /// to be in `scenario` unchanged (name, dependencies, requirement, timeout), or the revision is
    /// refused and the run goes on as before. Steps of the old graph that have not started are
    /// dropped; new steps start as soon as their dependencies are met (at once if they already
    /// are), and a new step waiting on a step that already failed is skipped as usual.
    ///
    /// The timeline carries the new scenario's name. A new `budget` counts from the start of
    /// the run, like the first. A finished run is not revised.
    public func revise(
        to scenario: StartupScenario, operations: [String: StartupOperation.Body], budget newBudget: Duration?
    ) throws(StartupRevisionError) {
        guard case .running = lifecycle else { throw .notRunning }
        let newGraph: StartupGraph
        do { newGraph = try StartupGraph(steps: scenario.steps) } catch { throw .invalid(error) }
        var newBodies: [StartupOperation.Body] = []
        for step in scenario.steps {
            guard let body = operations[step.name] else { throw .invalid(.missingBody(step.name)) }
            newBodies.append(body)
        }
        // Everything that has begun must carry over exactly.
        var carried: [Int: Int] = [:]  // new index → old index
        for (old, step) in graph.steps.enumerated() where started[old] != nil || outcomes[old] != nil {
            guard let new = newGraph.indexByName[step.name], newGraph.steps[new] == step else {
                throw .changesHistory(step.name)
            }
            carried[new] = old
        }
        adopt(newGraph, bodies: newBodies, carrying: carried)
        scenarioName = scenario.name
        if newBudget != budget {
            budget = newBudget
            budgetTask?.cancel()
            budgetTask = newBudget.map(spawnBudgetTimer)
        }
        logger.info("start-up revised to scenario \(scenario.name)")
        startWhatIsReady()
        finishIfDone()
    }

    /// Rebuilds the per-operation state for `newGraph`, keeping what `carried` maps across (the
    /// steps that have begun); every other step starts blank.
    private func adopt(_ newGraph: StartupGraph, bodies newBodies: [StartupOperation.Body], carrying carried: [Int: Int]) {
        let count = newGraph.count
        var newStarted = [Duration?](repeating: nil, count: count)
        var newEnded = [Duration](repeating: .zero, count: count)
        var newOutcomes = [OperationOutcome?](repeating: nil, count: count)
        var newTasks = [Task<Void, Never>?](repeating: nil, count: count)
        var oldToNew: [Int: Int] = [:]
        for (new, old) in carried {
            (newStarted[new], newEnded[new], newOutcomes[new], newTasks[new]) = (started[old], ended[old], outcomes[old], bodyTasks[old])
            oldToNew[old] = new
        }
        // Deadlines of running operations follow them to their new index.
        let newDeadlines = Heap(deadlines.unordered.compactMap { deadline in
            oldToNew[deadline.index].map { StartupDeadline(offset: deadline.offset, index: $0, timeout: deadline.timeout) }
        })
        graph = newGraph
        bodies = newBodies
        (started, ended, outcomes, bodyTasks, deadlines) = (newStarted, newEnded, newOutcomes, newTasks, newDeadlines)
        slots = slots.map { oldToNew[$0] ?? -1 }  // -1: never, as only unstarted steps are dropped
        decidedCount = newOutcomes.count { $0 != nil }
        remainingDependencies = newGraph.dependencies.map { deps in deps.count { newOutcomes[$0] != .ok } }
    }

    /// After a revision: skips the new steps behind a step that did not end `ok`, as the run
    /// skips dependents when a step fails, then starts every undecided step whose dependencies
    /// are all done.
    private func startWhatIsReady() {
        for index in graph.order {
            if let outcome = outcomes[index], outcome != .ok {
                skipDependents(of: index, because: "\(graph.steps[index].name) ended \(outcome.kind)")
            }
        }
        for index in graph.order where started[index] == nil && outcomes[index] == nil && remainingDependencies[index] == 0 {
            startOperation(index)
        }
    }
}

/// Why a running start-up could not switch scenarios; the run goes on with the one it had.
public enum StartupRevisionError: Error, Hashable, CustomStringConvertible {
    /// The sequence has not started, or has finished.
    case notRunning
    /// The new scenario's graph is not valid.
    case invalid(StartupGraphError)
    /// The new scenario lacks, or changes, a step that has already started.
    case changesHistory(String)

    public var description: String {
        switch self {
        case .notRunning: "start-up is not running, so it cannot switch scenarios"
        case let .invalid(error): "the new start-up scenario is invalid: \(error)"
        case let .changesHistory(name): "the new start-up scenario drops or changes '\(name)', which has already started"
        }
    }
}
