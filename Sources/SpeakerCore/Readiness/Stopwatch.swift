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
struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    init(clock: any Clock<Duration>) {
        (read, sleeper) = Self.make(clock)
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
    func elapsed() -> Duration { read() }

    /// Sleeps until `offset` after the start (returns at once if that is past); cancellable.
    func sleep(untilElapsed offset: Duration) async throws { try await sleeper(offset) }
}

extension Duration {
    /// Whole and fractional milliseconds, the unit of every human-facing figure we print.
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}
