/// Why waiting for a readiness level ended without reaching it.
public enum ReadinessError: Error, Equatable, CustomStringConvertible {
    /// The level was not reached within the timeout; `current` is where the gate stood.
    case timedOut(waitingFor: String, current: String, after: Duration)
    /// The waiting task was cancelled; its waiter was removed from the gate.
    case cancelled(waitingFor: String)

    public var description: String {
        switch self {
        case let .timedOut(level, current, after):
            "gave up waiting for readiness '\(level)' after \(after) (still at '\(current)')"
        case let .cancelled(level):
            "stopped waiting for readiness '\(level)': the request was cancelled"
        }
    }
}
