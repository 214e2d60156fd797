import AsyncSignals
/// Handed to a queued operation's work: its identity, and the way to finish it explicitly.
///
/// Callback-style work (a request answered by a later signal, an agent the system calls back)
/// cannot return its result; it calls ``finish()`` or ``fail(_:)`` from the callback instead.
/// Whichever of finish, fail, timeout and cancellation comes first decides the outcome; the rest
/// are ignored.
public final class OperationContext: Sendable {
    /// The operation's name, as given to the queue.
    public let name: String
    /// The queue-wide identity of this run.
    public let id: OperationID
    /// Decides the outcome: the first of finish, fail, timeout and cancel resolves it.
    let completion: OneShotSignal<OperationOutcome, Never>
    /// Resolved once the queue has booked the end, so a ticket's holder sees a consistent queue.
    let booked: OneShotSignal<OperationOutcome, Never>

    init(name: String, id: OperationID, clock: any Clock<Duration>) {
        self.name = name
        self.id = id
        completion = OneShotSignal(clock: clock)
        booked = OneShotSignal(clock: clock)
    }

    /// Marks the operation finished successfully. Returns whether this call decided the outcome.
    @discardableResult
    public func finish() -> Bool { completion.succeed(.ok) }

    /// Marks the operation failed with `error`'s description. Returns whether this decided it.
    @discardableResult
    public func fail(_ error: any Error) -> Bool { completion.succeed(.failed("\(error)")) }

    /// Marks the operation failed with a reason. Returns whether this call decided the outcome.
    @discardableResult
    public func fail(reason: String) -> Bool { completion.succeed(.failed(reason)) }

    /// Whether the operation has already ended (finished, failed, timed out or cancelled); work
    /// that polls can stop early.
    public var isFinished: Bool { completion.result != nil }
}

/// Identifies one operation added to a ``AsyncOperationQueue``.
public struct OperationID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    public var description: String { "#\(rawValue)" }
}

/// What ``AsyncOperationQueue/add(_:uniqueness:group:timeout:completion:onTimeout:_:)`` returns:
/// the operation's identity and a way to await how it ended.
public struct OperationTicket: Sendable {
    public let id: OperationID
    public let name: String
    let completion: OneShotSignal<OperationOutcome, Never>

    /// How the operation ended, once the queue has booked it (so it is no longer listed as
    /// running). Throws only if the awaiting task is cancelled.
    public func outcome() async throws(SignalWaitError) -> OperationOutcome {
        try await completion.result().get()
    }
}
