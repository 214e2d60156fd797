/// What a ``AsyncOperationQueue`` reports as it works.
///
/// `busy` and `drained` bracket every period with work queued or running, so an owner can hold
/// something for exactly that long (e.g. a sleep inhibitor, so the machine does not suspend in
/// the middle of an operation). A `finished` with no `started` before it means the
/// operation never ran (dropped as a duplicate, or cancelled while waiting).
public enum QueueEvent: Sendable, Hashable, CustomStringConvertible {
    /// The queue went from idle to having work.
    case busy
    /// The queue has nothing queued or running any more.
    case drained
    /// An operation started running.
    case started(name: String, id: OperationID)
    /// An operation ended (or was removed without running) with this outcome.
    case finished(name: String, id: OperationID, outcome: OperationOutcome)

    public var description: String {
        switch self {
        case .busy: "busy"
        case .drained: "drained"
        case let .started(name, id): "started \(name) \(id)"
        case let .finished(name, id, outcome): "finished \(name) \(id): \(outcome)"
        }
    }
}

/// What to do when an operation is added while one with the same name is queued or running.
public enum OperationUniqueness: Sendable, Hashable {
    /// Run both.
    case allowBoth
    /// Keep the existing one; the new one is skipped.
    case drop
    /// Cancel the existing one(s) and run the new one.
    case replace
}

/// How a queued operation signals that it is done.
public enum OperationCompletion: Sendable, Hashable {
    /// Returning from the work finishes it (throwing fails it).
    case onReturn
    /// Only ``OperationContext/finish()`` or ``OperationContext/fail(_:)`` finish it (or a
    /// timeout or cancellation); returning from the work does not.
    case explicit
}
