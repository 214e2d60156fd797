extension ReadinessGate {
    /// Starts the one task that works through polite blocks; there is never more than one, which
    /// is what spaces them out.
    func startPoliteRunner() {
        Task { await self.runPoliteBlocks() }
    }

    /// Before each polite block, pause for `politeSpacing` on the injected clock, then run the
    /// oldest one whose level still holds. A block whose level dropped meanwhile goes back to
    /// waiting for the next rise, so it still runs exactly once.
    private func runPoliteBlocks() async {
        while true {
            try? await clock.sleep(for: politeSpacing)
            let next: GateBlock? = state.withLock { state in
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
