import AsyncSignals
/// Where a new waiter ended up once it looked at the gate's state.
private enum WaiterPlacement { case parked, reached, cancelled }

extension ReadinessGate {
    /// Suspends until `level` is reached, at most `timeout` (on the injected clock) if given.
    ///
    /// This is how a request made during start-up waits for the level it needs. Cancelling the
    /// calling task removes its waiter from the gate at once and throws `.cancelled`.
    public func wait(for level: Level, timeout: Duration? = nil) async throws(ReadinessError) {
        if isReached(level) { return }
        do {
            guard let timeout else {
                try await waitUntilReached(level)
                return
            }
            switch try await timeboxed(timeout, clock: clock, { try await self.waitUntilReached(level) }) {
            case .finished:
                return
            case .timedOut:
                throw ReadinessError.timedOut(waitingFor: "\(level)", current: "\(self.level)", after: timeout)
            }
        } catch let error as ReadinessError {
            throw error
        } catch {
            throw .cancelled(waitingFor: "\(level)")
        }
    }

    /// The cancellable core of `wait`: a continuation parked in the gate's state.
    private func waitUntilReached(_ level: Level) async throws {
        let id = state.withLock { state in
            defer { state.nextWaiterID &+= 1 }
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let now: WaiterPlacement = state.withLock { state in
                    // Checked under the lock: the cancellation handler sets the flag before it
                    // takes the lock, so either it sees our waiter or we see the flag.
                    if Task.isCancelled { return .cancelled }
                    if state.level >= level { return .reached }
                    state.waiters[id] = Waiter(level: level, continuation: continuation)
                    return .parked
                }
                switch now {
                case .parked: break
                case .reached: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }
}
