import AsyncSignals
import Logging
import Synchronization

/// What a registration does once it has looked at the gate's state.
@usableFromInline
enum RegistrationDecision { case runNow, queued, startPoliteRunner }

extension ReadinessGate {
    /// Queues a block, or says it may run now: the one decision point that makes registration
    /// linearizable with `raise` and `drop`.
    @inlinable
    func register(_ level: Level, _ phase: GatePhase, _ label: BlockLabel, _ work: GateWork) {
        let decision: RegistrationDecision = state.withLock { state in
            if state.level >= level && !state.releasing {
                guard phase == .polite else { return .runNow }
                return state.enqueuePolite(state.makeBlock(label, work), at: level) ? .startPoliteRunner : .queued
            }
            // Not reached, or a release is in flight: the releaser (now or on the next rise)
            // picks this up, keeping registration order.
            state.file(state.makeBlock(label, work), at: level, phase)
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
    @usableFromInline
    enum RaiseDecision {
        case unchanged
        case handedToReleaseInFlight
        case release(Release)
    }

    /// Runs released work, then keeps draining whatever was registered or released meanwhile,
    /// and only then gives up the releaser role (under the lock, so nothing slips between).
    @inlinable
    func drain(startingWith first: Release) {
        var batch = first
        while true {
            if batch.startPoliteRunner { startPoliteRunner() }
            for group in batch.groups { perform(group) }
            for waiter in batch.waiters { waiter.resume() }
            batch = state.withLock { state in
                let next = state.takeReleasable()
                if next.isEmpty { state.releasing = false }
                return next
            }
            if batch.isEmpty { return }
        }
    }

    /// Runs released blocks in order, timing each one. One clock reading per block: the end of
    /// one block is the start of the next.
    @inlinable
    func perform(_ blocks: [GateBlock]) {
        var mark = stopwatch.elapsed()
        for gateBlock in blocks {
            guard case let .sync(block) = gateBlock.work else { continue }
            block()
            let now = stopwatch.elapsed()
            if now - mark > slowBlockThreshold { reportSlow(gateBlock.label, took: now - mark) }
            mark = now
        }
    }

    /// Runs one synchronous block and names it in the log if it was slow.
    @inlinable
    func perform(_ block: @Sendable () -> Void, _ label: BlockLabel) {
        let start = stopwatch.elapsed()
        block()
        let took = stopwatch.elapsed() - start
        if took > slowBlockThreshold { reportSlow(label, took: took) }
    }

    @usableFromInline
    func reportSlow(_ label: BlockLabel, took: Duration, allowed: Duration? = nil) {
        let allowed = allowed ?? slowBlockThreshold
        logger.warning(
            "slow readiness block \(label) took \(took.milliseconds) ms (threshold \(allowed.milliseconds) ms)",
            metadata: ["label": "\(label)"]
        )
    }
}
