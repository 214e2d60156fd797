import Logging

extension StartupSequencer {
    /// Starts one operation's body and, if it has a timeout, its timer.
    func startOperation(_ index: Int) {
        started[index] = stopwatch.elapsed()
        let step = graph.steps[index]
        eventBroadcaster.publish(.started(step.name))
        // The body reports through its slot, not the graph index: a revision may renumber the graph.
        slots.append(index)
        bodyTasks[index] = spawnBody(slot: slots.count - 1, bodies[index], StartupContext(name: step.name))
        if let timeout = step.timeout ?? defaultTimeout {
            scheduleDeadline(for: index, timeout: timeout, startedAt: started[index]!)
        }
    }

    /// Spawned from a nonisolated context so the body starts on the global executor instead of
    /// first queueing on this actor.
    nonisolated func spawnBody(slot: Int, _ body: @escaping StartupOperation.Body, _ context: StartupContext) -> Task<Void, Never> {
        Task {
            let outcome: OperationOutcome
            do {
                try await body(context)
                outcome = .ok
            } catch let abort as StartupAbort {
                await self.bodyAborted(slot: slot, abort.reason)
                return
            } catch is CancellationError {
                outcome = .cancelled
            } catch let skipped as OperationSkipped {
                outcome = .skipped(skipped.reason)
            } catch {
                outcome = .failed("\(error)")
            }
            await self.bodyEnded(slot: slot, outcome)
        }
    }

    func bodyEnded(slot: Int, _ outcome: OperationOutcome) { operationEnded(slots[slot], outcome) }
    func bodyAborted(slot: Int, _ reason: String) { operationAborted(slots[slot], reason) }

    func spawnBudgetTimer(_ budget: Duration) -> Task<Void, Never> {
        let stopwatch = self.stopwatch
        return Task.detached {
            do { try await stopwatch.sleep(untilElapsed: budget) } catch { return }
            await self.budgetElapsed(budget)
        }
    }

    // MARK: - Outcomes

    /// Whether the operation is running and undecided: only then may an outcome land.
    func isRunning(_ index: Int) -> Bool { started[index] != nil && outcomes[index] == nil }

    func operationEnded(_ index: Int, _ outcome: OperationOutcome) {
        guard isRunning(index) else { return }
        settle(index, outcome)
        let step = graph.steps[index]
        if outcome == .ok {
            // One exclusive access for the whole loop instead of one per dependent: a dense
            // graph has ~100 dependents per operation, and each checked access costs.
            let dependents = graph.dependents[index]
            let ready = remainingDependencies.withUnsafeMutableBufferPointer { remaining in
                var ready: [Int] = []
                for dependent in dependents {
                    remaining[dependent] -= 1
                    if remaining[dependent] == 0 { ready.append(dependent) }
                }
                return ready
            }
            for dependent in ready where outcomes[dependent] == nil { startOperation(dependent) }
        } else if step.requirement == .required {
            abort("the required step '\(step.name)' \(outcome.sentence)")
        } else {
            skipDependents(of: index, because: "\(step.name) ended \(outcome.kind)")
        }
        finishIfDone()
    }

    func operationTimedOut(_ index: Int, after timeout: Duration) {
        guard isRunning(index) else { return }
        bodyTasks[index]?.cancel()
        logger.warning("start-up operation \(graph.steps[index].name) timed out after \(timeout); cancelling it")
        operationEnded(index, .timedOut)
    }

    func operationAborted(_ index: Int, _ reason: String) {
        guard isRunning(index) else { return }
        settle(index, .failed("aborted start-up: \(reason)"))
        abort(reason)
    }

    /// Records an outcome: the end time and the event.
    func settle(_ index: Int, _ outcome: OperationOutcome) {
        let now = stopwatch.elapsed()
        if started[index] == nil { started[index] = now }
        ended[index] = now
        outcomes[index] = outcome
        decidedCount += 1
        bodyTasks[index] = nil
        eventBroadcaster.publish(.finished(graph.steps[index].name, outcome))
    }

    /// Skips, transitively, every undecided operation that needs `index`.
    func skipDependents(of index: Int, because reason: String) {
        var stack = graph.dependents[index]
        while let dependent = stack.popLast() {
            guard outcomes[dependent] == nil else { continue }
            settle(dependent, .skipped(reason))
            stack.append(contentsOf: graph.dependents[dependent])
        }
    }

    /// Cancels whatever runs and marks everything undecided as cancelled; keeps the first reason.
    func abort(_ reason: String, level: Logger.Level = .error) {
        if abortReason == nil {
            abortReason = reason
            logger.log(level: level, "start-up aborted: \(reason)")
            eventBroadcaster.publish(.aborted(reason: reason))
        }
        for index in 0..<graph.count where outcomes[index] == nil {
            bodyTasks[index]?.cancel()
            settle(index, .cancelled)
        }
        finishIfDone()
    }
}
