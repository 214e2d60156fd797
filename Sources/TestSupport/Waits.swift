import Clocks
import Testing

extension TestClock where Duration == Swift.Duration {
    /// Returns once some task is sleeping on this clock, so a following `advance` is not lost.
    public func untilSomeoneSleeps(sourceLocation: SourceLocation = #_sourceLocation) async {
        for _ in 0..<20_000 {
            if (try? await checkSuspension()) == nil { return }
        }
        Issue.record("nothing ever slept on the test clock", sourceLocation: sourceLocation)
    }
}

/// Yields until `condition` holds; fails the test (rather than hanging) if it never does. For
/// what other tasks make true without waiting on time (a waiter parks, a runner goes idle).
///
/// Each turn hops through a background-priority task, as TestClock's own `megaYield` does:
/// spinning with plain `Task.yield()` at the test's priority can starve those background hops
/// when many tests run at once on two cores, and then a clock `advance` never completes.
public func yieldUntil(
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @Sendable () async -> Bool
) async {
    for _ in 0..<20_000 {
        if await condition() { return }
        await Task.detached(priority: .background) { await Task.yield() }.value
    }
    Issue.record("never became true: \(what)", sourceLocation: sourceLocation)
}
