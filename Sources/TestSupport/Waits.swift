import Clocks
import Testing

/// A wait that failed: the condition never held within its bound.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "timed out waiting until \(what)" }

    public init(what: String) { self.what = what }
}

/// Polls `condition` every `interval` until it holds; fails the test after `limit` of real time.
/// The bound only turns a hang into a failure: the wait ends as soon as the condition holds.
public func eventually(_ what: String, within limit: Duration = .seconds(20),
                       every interval: Duration = .milliseconds(20),
                       _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting until \(what)")
            throw TimedOut(what: what)
        }
        try await Task.sleep(for: interval)
    }
}

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
