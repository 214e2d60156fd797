/// Monotonic elapsed time read from an injected clock.
///
/// The primitives take `any Clock<Duration>` so tests can drive time, but an existential clock's
/// `Instant` is opaque. Opening it once here and keeping only "time since start" gives every
/// caller cheap, comparable `Duration` offsets (for slow-block warnings, timelines and budgets)
/// without generic parameters leaking into every type.
///
/// Deadlines are offsets from the same start, fixed when they are computed: a timer task that
/// only gets to run later still wakes at the right instant (and at once if it is already past),
/// which also makes timeouts deterministic under a test clock.
public struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    public init(clock: any Clock<Duration>) {
        // The production clock gets a specialised reader: it is read once per readiness block,
        // and going through the existential's witness tables would double the cost.
        if let continuous = clock as? ContinuousClock {
            (read, sleeper) = Self.make(continuous)
        } else {
            (read, sleeper) = Self.make(clock)
        }
    }

    private static func make<C: Clock<Duration>>(
        _ clock: C
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let start = clock.now
        return (
            { start.duration(to: clock.now) },
            { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
        )
    }

    /// Time elapsed on the clock since this stopwatch was made.
    public func elapsed() -> Duration { read() }

    /// Sleeps until `offset` after the start (returns at once if that is past); cancellable.
    ///
    /// A deadline that has just been reached counts as past. Clocks differ on sleeping until
    /// exactly "now" (a test clock parks such a sleeper until it is advanced again), and a timer
    /// task that only gets to run once its deadline has arrived must fire, not wait.
    public func sleep(untilElapsed offset: Duration) async throws {
        try Task.checkCancellation()
        if elapsed() >= offset { return }
        try await sleeper(offset)
    }
}

extension Duration {
    /// Whole and fractional milliseconds, the unit of every human-facing figure we print.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }

    /// "30 s", "1.5 s", "250 ms": how a person reads a timeout.
    public var spokenSeconds: String {
        let (seconds, attoseconds) = components
        if attoseconds == 0 { return "\(seconds) s" }
        if milliseconds < 1000 { return "\(Int(milliseconds.rounded())) ms" }
        let tenths = (milliseconds / 100).rounded() / 10
        return "\(tenths) s"
    }
}
