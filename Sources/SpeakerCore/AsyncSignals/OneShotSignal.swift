import Synchronization

/// A value (or typed failure) that arrives once, awaited by any number of waiters.
///
/// The first ``resolve(_:)`` wins and later ones are ignored (the caller learns whether it won),
/// waiters that arrive after it get the result at once, and a cancelled waiter is removed from
/// the signal at once, so a long-lived signal does not collect dead waiters. Used for "the
/// adapter is powered", "the soundfont is loaded", and inside the operation queue and sequencer
/// to decide which of finish / fail / timeout / cancel happened first.
public final class OneShotSignal<Value: Sendable, Failure: Error>: Sendable {
    typealias Continuation = UnsafeContinuation<Result<Value, Failure>, any Error>

    enum Waiter {
        case task(Continuation)
        case observer(@Sendable (Result<Value, Failure>) -> Void)
    }

    /// Parked waiters until the result arrives; then only the result. The waiters live in a
    /// struct field (not an enum payload) so adding and removing one edits the dictionary in place.
    struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var outcome: Result<Value, Failure>?
    }

    let state = Mutex(State())
    let clock: any Clock<Duration>

    /// - Parameter clock: times out waiters that pass a `timeout`.
    public init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    // MARK: - Resolving

    /// Resolves the signal with `result` unless it already was; returns whether this call won.
    @discardableResult
    public func resolve(_ result: Result<Value, Failure>) -> Bool {
        let waiters: [UInt64: Waiter]? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer { state.waiters = [:] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters.values {
            switch waiter {
            case let .task(continuation): continuation.resume(returning: result)
            case let .observer(handler): handler(result)
            }
        }
        return true
    }

    /// Resolves with a success; returns whether this call won.
    @discardableResult
    public func succeed(_ value: Value) -> Bool { resolve(.success(value)) }

    /// Resolves with a failure; returns whether this call won.
    @discardableResult
    public func fail(_ error: Failure) -> Bool { resolve(.failure(error)) }

    /// The result, if the signal has been resolved.
    public var result: Result<Value, Failure>? {
        state.withLock { $0.outcome }
    }

    /// How many tasks and observers are parked; drops as soon as one is cancelled.
    public var waiterCount: Int {
        state.withLock { $0.waiters.count }
    }

    // MARK: - Observing without a task

    /// Calls `handler` with the result: at once if resolved, else when it is.
    ///
    /// For callback-style code that cannot suspend. Cancelling the returned subscription drops
    /// the handler (and everything it captured) at once.
    @discardableResult
    public func observe(_ handler: @escaping @Sendable (Result<Value, Failure>) -> Void) -> SignalSubscription {
        let id: UInt64? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            defer { state.nextID &+= 1 }
            state.waiters[state.nextID] = .observer(handler)
            return state.nextID
        }
        guard let id else {
            if let result { handler(result) }
            return SignalSubscription {}
        }
        return SignalSubscription { [weak self] in _ = self?.removeWaiter(id) }
    }

    /// Removes a parked waiter; returns it so the caller can resume it outside the lock.
    func removeWaiter(_ id: UInt64) -> Waiter? {
        state.withLock { $0.waiters.removeValue(forKey: id) }
    }
}

/// Cancels a ``OneShotSignal/observe(_:)`` registration.
public struct SignalSubscription: Sendable {
    private let onCancel: @Sendable () -> Void

    init(_ onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    /// Drops the handler; it will not be called and is released at once.
    public func cancel() { onCancel() }
}
