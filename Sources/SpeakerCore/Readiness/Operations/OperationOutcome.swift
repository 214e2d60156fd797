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
    /// It never ran, for the reason given (a dependency failed, a duplicate was dropped).
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
