import Logging

/// What a registration does once it has looked at the gate's state.
private enum RegistrationDecision { case runNow, queued, startPoliteRunner }

extension ReadinessGate {
    /// Queues a block, or says it may run now: the one decision point that makes registration
    /// linearizable with `raise` and `drop`.
    func register(_ level: Level, _ phase: Phase, _ label: BlockLabel, _ work: Work) {
        let decision: RegistrationDecision = state.withLock { state in
            let reached = state.level >= level
            if reached && !state.releasing {
                guard phase == .polite else { return .runNow }
                return state.enqueuePolite(state.makeEntry(level, phase, label, work)) ? .startPoliteRunner : .queued
            }
            // Not reached, or a release is in flight: the releaser (now or on the next rise)
            // picks this up, keeping registration order.
            state.pending.append(state.makeEntry(level, phase, label, work))
            return .queued
        }
        switch decision {
        case .runNow:
            if case let .sync(block) = work { perform(block, label) }
        case .queued:
            break
        case .startPoliteRunner:
            startPoliteRunner()
        }
    }

    /// Raises the level under the lock and claims the release, or hands it to a releaser in flight.
    enum RaiseDecision {
        case unchanged
        case handedToReleaseInFlight
        case release(Release)
    }

    /// Runs released work, then keeps draining whatever was registered or released meanwhile,
    /// and only then gives up the releaser role (under the lock, so nothing slips between).
    func drain(startingWith first: Release) {
        var batch = first
        while true {
            if batch.startPoliteRunner { startPoliteRunner() }
            for entry in batch.blocks {
                if case let .sync(block) = entry.work { perform(block, entry.label) }
            }
            for waiter in batch.waiters { waiter.resume() }
            batch = state.withLock { state in
                let next = state.takeReleasable()
                if next.isEmpty { state.releasing = false }
                return next
            }
            if batch.isEmpty { return }
        }
    }

    /// Runs one synchronous block and names it in the log if it was slow.
    func perform(_ block: @Sendable () -> Void, _ label: BlockLabel) {
        let start = stopwatch.elapsed()
        block()
        reportIfSlow(label, took: stopwatch.elapsed() - start)
    }

    func reportIfSlow(_ label: BlockLabel, took: Duration) {
        guard took > slowBlockThreshold else { return }
        logger.warning(
            "slow readiness block \(label) took \(took.milliseconds) ms (threshold \(slowBlockThreshold.milliseconds) ms)",
            metadata: ["label": "\(label)"]
        )
    }
}
