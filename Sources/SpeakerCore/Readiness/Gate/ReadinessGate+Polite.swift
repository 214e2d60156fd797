extension ReadinessGate {
    /// Starts the one task that works through polite blocks; there is never more than one, which
    /// is what spaces them out.
    @usableFromInline
    func startPoliteRunner() {
        let runner = Task { await self.runPoliteBlocks() }
        state.withLock { $0.politeRunner = runner }
    }

    /// Drops every polite block not yet run and stops the runner before its next block (one
    /// already running finishes). For an owner shutting down: a polite block holds what it
    /// captured (usually the owner itself), and a runner pausing between blocks on a clock that
    /// no longer moves (a test's) would keep it, and the gate, for ever.
    public func cancelPoliteBlocks() {
        let runner: Task<Void, Never>? = state.withLock { state in
            state.politeQueue.removeAll()
            for index in state.pendingBlocks.indices { state.pendingBlocks[index].polite.removeAll() }
            defer { state.politeRunner = nil }
            return state.politeRunner
        }
        runner?.cancel()
    }

    /// Before each polite block, pause for `politeSpacing` on the injected clock, then run the
    /// oldest one whose level still holds. A block whose level dropped meanwhile goes back to
    /// waiting for the next rise, so it still runs exactly once.
    private func runPoliteBlocks() async {
        while true {
            try? await clock.sleep(for: politeSpacing)
            let next: GateBlock? = state.withLock { state in
                // Cancelled (`cancelPoliteBlocks`): the queue was emptied; nothing more runs.
                if Task.isCancelled { state.politeQueue.removeAll() }
                while let turn = state.politeQueue.popFirst() {
                    if turn.level <= state.level { return turn.block }
                    state.refilePolite(turn)
                }
                state.politeRunnerActive = false
                return nil
            }
            guard let next else { return }
            if case let .polite(block, budget) = next.work {
                let start = stopwatch.elapsed()
                await block()
                let took = stopwatch.elapsed() - start
                let allowed = budget ?? slowBlockThreshold
                if took > allowed { reportSlow(next.label, took: took, allowed: allowed) }
            }
            let more = state.withLock { state in
                if state.politeQueue.isEmpty { state.politeRunnerActive = false }
                return state.politeRunnerActive
            }
            if !more { return }
        }
    }
}
