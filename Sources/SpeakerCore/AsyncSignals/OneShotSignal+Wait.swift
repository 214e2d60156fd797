/// Where a new waiter ended up once it looked at the signal's state.
private enum SignalWaiterPlacement<Value, Failure: Error> {
    case parked
    case resolved(Result<Value, Failure>)
    case cancelled
}

extension OneShotSignal {
    /// The signal's result: at once if it is resolved, else when it is.
    ///
    /// With a `timeout`, gives up after that long on the signal's clock. Cancelling the waiting
    /// task removes its waiter from the signal immediately.
    public func result(timeout: Duration? = nil) async throws(SignalWaitError) -> Result<Value, Failure> {
        if let result { return result }
        do {
            guard let timeout else { return try await parkUntilResolved() }
            switch try await timeboxed(timeout, clock: clock, { try await self.parkUntilResolved() }) {
            case let .finished(result): return result
            case .timedOut: throw SignalWaitError.timedOut(after: timeout)
            }
        } catch let error as SignalWaitError {
            throw error
        } catch {
            throw .cancelled
        }
    }

    /// The signal's success value; its failure, a timeout or cancellation are thrown.
    public func value(timeout: Duration? = nil) async throws(OneShotSignalError<Failure>) -> Value {
        let outcome: Result<Value, Failure>
        do {
            outcome = try await result(timeout: timeout)
        } catch {
            throw OneShotSignalError(error)
        }
        switch outcome {
        case let .success(value): return value
        case let .failure(failure): throw .failed(failure)
        }
    }

    /// Parks the current task in the waiter table until the signal resolves or it is cancelled.
    private func parkUntilResolved() async throws -> Result<Value, Failure> {
        let id = state.withLock { state in
            defer { state.nextID &+= 1 }
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: Continuation) in
                let placement: SignalWaiterPlacement<Value, Failure> = state.withLock { state in
                    if let outcome = state.outcome { return .resolved(outcome) }
                    // The cancellation handler sets the flag before taking the lock: either it
                    // finds this waiter, or this check sees the flag.
                    if Task.isCancelled { return .cancelled }
                    state.waiters[id] = .task(continuation)
                    return .parked
                }
                switch placement {
                case .parked: break
                case let .resolved(result): continuation.resume(returning: result)
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            if case let .task(continuation) = removeWaiter(id) {
                continuation.resume(throwing: CancellationError())
            }
        }
    }
}
