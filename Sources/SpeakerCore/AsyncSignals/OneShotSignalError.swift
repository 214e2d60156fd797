/// Why waiting on a ``OneShotSignal`` ended without a result.
public enum SignalWaitError: Error, Equatable, CustomStringConvertible {
    /// The waiting task was cancelled; its waiter was removed from the signal.
    case cancelled
    /// No result arrived within the timeout (measured on the signal's clock).
    case timedOut(after: Duration)

    public var description: String {
        switch self {
        case .cancelled: "stopped waiting for the signal: the waiting task was cancelled"
        case let .timedOut(after): "no result arrived within \(after)"
        }
    }
}

/// Why ``OneShotSignal/value(timeout:)`` did not return a value.
public enum OneShotSignalError<Failure: Error>: Error, CustomStringConvertible {
    /// The signal was resolved with this failure.
    case failed(Failure)
    /// The waiting task was cancelled.
    case cancelled
    /// No result arrived within the timeout.
    case timedOut(after: Duration)

    init(_ waitError: SignalWaitError) {
        switch waitError {
        case .cancelled: self = .cancelled
        case let .timedOut(after): self = .timedOut(after: after)
        }
    }

    public var description: String {
        switch self {
        case let .failed(failure): "\(failure)"
        case .cancelled: SignalWaitError.cancelled.description
        case let .timedOut(after): SignalWaitError.timedOut(after: after).description
        }
    }
}
