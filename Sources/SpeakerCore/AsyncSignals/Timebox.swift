/// The result of racing an operation against a timeout on an injected clock.
public enum Timeboxed<Value: Sendable>: Sendable {
    case finished(Value)
    case timedOut
}

/// Runs `operation`, giving up after `timeout` on `clock`.
///
/// Both sides are children of one task group, so whichever loses is cancelled at once and
/// nothing outlives the call: a cancelled sleep leaves no suspension on a test clock, and a
/// cancelled operation removes its own waiter. Cancelling the caller cancels both and the
/// operation's `CancellationError` (or its own error) is rethrown.
public func timeboxed<Value: Sendable>(
    _ timeout: Duration,
    clock: any Clock<Duration>,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Timeboxed<Value> {
    let stopwatch = Stopwatch(clock: clock)  // the deadline is fixed now, not when the timer runs
    return try await withThrowingTaskGroup(of: Timeboxed<Value>.self) { group in
        group.addTask { .finished(try await operation()) }
        group.addTask {
            try await stopwatch.sleep(untilElapsed: timeout)
            return .timedOut
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
