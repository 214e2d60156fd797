import AsyncSignals
import Logging
import Synchronization

/// Gates work on ordered readiness levels: run it now if the level is reached, else when it is.
///
/// This is Signal-iOS's AppReadiness generalised: levels are any `Comparable` type (each owner
/// brings its own, usually an enum of named stages), the level can **drop** (a resource it
/// stood on was lost) and rise again, async callers can ``wait(for:timeout:)``, and deferred
/// "polite" work is spaced out instead of stampeding the moment start-up finishes.
///
/// Guarantees:
/// - **Exactly once.** Every registered block runs once, never twice and never lost, even when the
///   registration races a `raise` or `drop` on another thread. All state lives behind one
///   `Mutex`: a registration either sees the new level (and runs) or is queued before the
///   raise takes its snapshot (and is released by it).
/// - **Order.** When a level is reached, its will-reach hooks run before its did-reach blocks, each
///   in registration order; lower levels are released before higher ones. While a release is in
///   flight, new registrations queue behind it instead of overtaking it, so a block registered
///   from inside a released block runs after the ones already released, not re-entrantly.
/// - **Blocks never run under the lock**, so a block may register more blocks, raise or drop.
/// - **Fast for any level type.** The hot paths (registering, raising, dropping, releasing) are
///   `@inlinable`, their state `@usableFromInline`, so each caller's module specialises them for
///   its own level type; unspecialised generic code costs about 2× on registration throughput
///   (see docs/BENCHMARKS.md). Exported specialisations would have to name each level type here,
///   in the module meant to know none of them.
/// - **Slow blocks are named.** A block slower than `slowBlockThreshold` (10 ms) on the injected
///   clock is logged with its label (the registering `file:line` by default).
public final class ReadinessGate<Level: Comparable & Sendable>: Sendable {
    @usableFromInline let state: Mutex<GateState>
    let clock: any Clock<Duration>
    @usableFromInline let stopwatch: Stopwatch
    let politeSpacing: Duration
    @usableFromInline let slowBlockThreshold: Duration
    let logger: Logger
    @usableFromInline let changes = Broadcaster<Level>()

    /// - Parameters:
    ///   - initial: the level the gate starts at (nothing at or below it waits).
    ///   - clock: measures slow blocks, spaces polite blocks and times out waiters.
    ///   - politeSpacing: the pause before each polite block once its level is reached.
    ///   - slowBlockThreshold: blocks that take longer are logged with their label.
    public init(
        initial: Level,
        clock: any Clock<Duration> = ContinuousClock(),
        politeSpacing: Duration = .milliseconds(25),
        slowBlockThreshold: Duration = .milliseconds(10),
        logger: Logger = Logger(label: "readiness")
    ) {
        state = Mutex(GateState(level: initial))
        self.clock = clock
        stopwatch = Stopwatch(clock: clock)
        self.politeSpacing = politeSpacing
        self.slowBlockThreshold = slowBlockThreshold
        self.logger = logger
    }

    /// The level the gate stands at now.
    public var level: Level { state.withLock { $0.level } }

    /// Whether `level` has been reached (the gate stands at it or above).
    public func isReached(_ level: Level) -> Bool { state.withLock { $0.level >= level } }

    /// The current level, then every later level the gate raises or drops to, in order.
    ///
    /// The stream ends when the caller stops iterating; it holds nothing afterwards.
    public func levels() -> AsyncStream<Level> {
        state.withLock { changes.subscribe(startingWith: $0.level) }
    }

    // MARK: - Registering work

    /// Runs `block` at once, on the caller's thread, if `level` is reached; otherwise when it is,
    /// on the thread that raises the level.
    ///
    /// One exception keeps order: while a release is running (on any thread), the block is
    /// queued behind the blocks being released and run by the releasing thread, right after them.
    /// Use it for work that must happen as soon as possible (serving an API once its connection
    /// is up). Keep it short: a block slower than the threshold is logged with its label.
    @inlinable
    public func runNowOrWhen(
        _ level: Level,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ block: @escaping @Sendable () -> Void
    ) {
        register(level, GatePhase.didReach, BlockLabel(label, fileID: fileID, line: line), GateWork.sync(block))
    }

    /// Runs `block` just before the did-reach blocks of `level` (at once if already reached).
    ///
    /// Hooks prepare state the did-reach blocks rely on (e.g. publish a device's name before
    /// anyone reacts to it being connected).
    @inlinable
    public func runNowOrWhenAboutToReach(
        _ level: Level,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ block: @escaping @Sendable () -> Void
    ) {
        register(level, GatePhase.willReach, BlockLabel(label, fileID: fileID, line: line), GateWork.sync(block))
    }

    /// Runs `block` some time after `level` is reached, one polite block at a time, each preceded
    /// by a pause of `politeSpacing`, in registration order.
    ///
    /// For deferred work that must not compete with the urgent path (preloading a large file,
    /// tidying state): the urgent blocks run first, then these trickle in. Work that is expected
    /// to take a while gives its `budget`: it is named as slow only past that, not past the
    /// gate's threshold for quick blocks. If the level drops
    /// before a polite block's turn, it waits for the next rise.
    @inlinable
    public func runNowOrWhenPolitely(
        _ level: Level,
        label: String? = nil,
        budget: Duration? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ block: @escaping @Sendable () async -> Void
    ) {
        register(level, GatePhase.polite, BlockLabel(label, fileID: fileID, line: line), GateWork.polite(block, budget: budget))
    }

    // MARK: - Changing the level

    /// Raises the gate to `level` and releases everything waiting for it or a lower level.
    ///
    /// Released blocks run on the calling thread before this returns (unless a release is already
    /// in flight on another thread, which then runs them). Returns `false`, changing nothing, when
    /// the gate already stands at or above `level`.
    @discardableResult
    @inlinable
    public func raise(to level: Level) -> Bool {
        let decision: RaiseDecision = state.withLock { state in
            guard level > state.level else { return .unchanged }
            state.level = level
            changes.publish(level)
            guard !state.releasing else { return .handedToReleaseInFlight }
            state.releasing = true
            return .release(state.takeReleasable())
        }
        switch decision {
        case .unchanged:
            return false
        case .handedToReleaseInFlight:
            return true
        case let .release(batch):
            drain(startingWith: batch)
            return true
        }
    }

    /// Drops the gate to `level` (e.g. a connection the higher levels stood on was lost).
    ///
    /// Blocks already released are not recalled; blocks registered from now on for a level above
    /// `level` wait for the next rise. Returns `false` when the gate already stands at or below it.
    @discardableResult
    @inlinable
    public func drop(to level: Level) -> Bool {
        state.withLock { state in
            guard level < state.level else { return false }
            state.level = level
            changes.publish(level)
            return true
        }
    }

    /// How many blocks and waiters are still waiting for a level: the tests' proof that a caller
    /// who left took its waiter with it.
    var pendingCount: Int {
        state.withLock { $0.pendingBlockCount + $0.waiters.count + $0.politeQueue.count }
    }

    /// Whether a polite block is queued or running (the polite runner is at work); for tests.
    var isRunningPoliteBlocks: Bool { state.withLock { $0.politeRunnerActive } }
}
