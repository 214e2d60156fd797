/// One discovery at a time, shared by everyone who asks while it runs.
///
/// Discoveries are speaker operations of one group, so concurrent `Scan` calls used to run one
/// after another: sixteen of them answered at 10, 20, … 160 s, and another user's scan gave up
/// after 120 s. A scan asked while one runs now joins it and gets its candidates when it ends,
/// so every call answers within its own `scan_seconds` and nobody's scan waits for another's.
/// A caller that leaves (its client left the bus) stops waiting at once; the discovery itself
/// stops only when every caller joined to it has left.
actor SharedDiscovery {
    typealias Outcome = Result<[RankedCandidate], any Error>

    private enum State {
        case idle
        /// A discovery runs (`run` numbers it), with the callers waiting for its outcome, by id.
        case running(run: UInt64, task: Task<Void, Never>, waiters: [UInt64: CheckedContinuation<Outcome, Never>])
    }

    private var state = State.idle
    private var nextID: UInt64 = 0

    /// How many callers wait for the discovery running now (0 when none runs).
    var waiting: Int {
        if case .running(_, _, let waiters) = state { waiters.count } else { 0 }
    }

    /// The outcome of the discovery running now, or of one started with `discover` when none runs.
    func join(_ discover: @escaping @Sendable () async throws -> [RankedCandidate]) async throws -> [RankedCandidate] {
        nextID += 1
        let id = nextID
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                add(continuation, id: id, discover)
            }
        } onCancel: {
            Task { await self.leave(id) }
        }
        return try outcome.get()
    }

    private func add(_ waiter: CheckedContinuation<Outcome, Never>, id: UInt64,
                     _ discover: @escaping @Sendable () async throws -> [RankedCandidate]) {
        switch state {
        case .running(let run, let task, var waiters):
            waiters[id] = waiter
            state = .running(run: run, task: task, waiters: waiters)
        case .idle:
            let run = id
            let task = Task {
                let outcome: Outcome
                do { outcome = .success(try await discover()) } catch { outcome = .failure(error) }
                self.finish(run, with: outcome)
            }
            state = .running(run: run, task: task, waiters: [id: waiter])
        }
    }

    /// The discovery `run` ended: everyone still joined to it gets its outcome.
    private func finish(_ run: UInt64, with outcome: Outcome) {
        guard case .running(let current, _, let waiters) = state, current == run else { return }
        state = .idle
        for waiter in waiters.values { waiter.resume(returning: outcome) }
    }

    /// Caller `id` left: it stops waiting; the discovery stops once nobody waits for it.
    private func leave(_ id: UInt64) {
        guard case .running(let run, let task, var waiters) = state,
              let waiter = waiters.removeValue(forKey: id) else { return }
        waiter.resume(returning: .failure(CancellationError()))
        if waiters.isEmpty {
            state = .idle
            task.cancel()
        } else {
            state = .running(run: run, task: task, waiters: waiters)
        }
    }
}
