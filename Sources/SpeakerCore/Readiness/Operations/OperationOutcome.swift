/// How an operation (queued or part of start-up) ended.
///
/// The `kind` strings are stable: `composer-cli startup --json` prints them as `outcome`.
public enum OperationOutcome: Sendable, Hashable, CustomStringConvertible {
    /// It finished its work.
    case ok
    /// It threw, or reported a failure; the reason is the error's description.
    case failed(String)
    /// It did not finish within its timeout; its work was cancelled.
    case timedOut
    /// It was cancelled (by a caller, a replacement, or an aborted sequence) before finishing.
    case cancelled
    /// It did not do its work, for the reason given: it never ran (a dependency failed, a
    /// duplicate was dropped), or it found the work was not its to do (`OperationSkipped`: a
    /// speaker left for a person to pick).
    case skipped(String)

    /// The stable one-word name of the outcome: ok, failed, timedOut, cancelled or skipped.
    public var kind: String {
        switch self {
        case .ok: "ok"
        case .failed: "failed"
        case .timedOut: "timedOut"
        case .cancelled: "cancelled"
        case .skipped: "skipped"
        }
    }

    /// The reason carried by `failed` and `skipped`.
    public var reason: String? {
        switch self {
        case let .failed(reason), let .skipped(reason): reason
        case .ok, .timedOut, .cancelled: nil
        }
    }

    /// Rebuilds an outcome from its `kind` and `reason`, as printed in JSON.
    public init?(kind: String, reason: String?) {
        switch kind {
        case "ok": self = .ok
        case "failed": self = .failed(reason ?? "")
        case "timedOut": self = .timedOut
        case "cancelled": self = .cancelled
        case "skipped": self = .skipped(reason ?? "")
        default: return nil
        }
    }

    public var description: String {
        if let reason { "\(kind): \(reason)" } else { kind }
    }

    /// How it ended, as the end of a sentence about the operation: "failed: no system bus",
    /// "timed out", "was cancelled", "was skipped: …", "finished".
    public var sentence: String {
        switch self {
        case .ok: "finished"
        case let .failed(reason): reason.isEmpty ? "failed" : "failed: \(reason)"
        case .timedOut: "timed out"
        case .cancelled: "was cancelled"
        case let .skipped(reason): reason.isEmpty ? "was skipped" : "was skipped: \(reason)"
        }
    }
}

/// Thrown by an operation that finds its work is not its to do, so it ends `skipped` with the
/// reason rather than `ok` (it did not do it) or `failed` (nothing went wrong): start-up's
/// scan-and-pick without `auto_pick` leaves the pick to a person.
public struct OperationSkipped: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
