/// A concrete `Clock` over any `Clock<Duration>`, for generic types (the reconnect policy)
/// held by code that receives its clock as an existential.
///
/// Instants are durations since the clock was wrapped; sleeping is delegated, so a TestClock
/// underneath still controls every timer.
///
/// Not swift-clocks' `AnyClock`, which does the same: its `Clocks` module imports Foundation
/// (TestClock, ImmediateClock, and IssueReporting under them), and speakerd is linked with
/// FoundationEssentials only; tried, the link then needs libFoundation,
/// CoreFoundation and ICU in the daemon's image. Tests use swift-clocks' TestClock freely.
public struct ErasedClock: Clock {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void
    public let minimumResolution: Duration

    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleeper = { try await clock.sleep(for: $0) }
        minimumResolution = clock.minimumResolution
    }

    public var now: Instant { Instant(offset: elapsed()) }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let remaining = now.duration(to: deadline)
        if remaining > .zero { try await sleeper(remaining) } else { try Task.checkCancellation() }
    }
}

extension Clock {
    /// A task that runs `fire` at `deadline` unless it is cancelled first: how a runner carries
    /// out a core's timer effect (the firing is fed back as an event).
    func timer(at deadline: Instant, _ fire: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task {
            do { try await sleep(until: deadline, tolerance: nil) } catch { return }
            await fire()
        }
    }
}
