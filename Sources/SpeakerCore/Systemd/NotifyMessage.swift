/// One `sd_notify` assignment, as documented in sd_notify(3).
public enum NotifyMessage: Equatable, Sendable {
    /// Start-up finished: the API is on the bus.
    case ready
    /// A line a person reads in `systemctl status` ("Connecting to JBL Flip 5…").
    case status(String)
    /// Keep-alive for `WatchdogSec=`.
    case watchdog
    /// Shutdown has begun.
    case stopping

    /// The wire form; newlines in a status would start a new assignment, so they become spaces.
    public var assignment: String {
        switch self {
        case .ready: "READY=1"
        case .status(let text): "STATUS=" + String(text.map { $0.isNewline ? " " : $0 })
        case .watchdog: "WATCHDOG=1"
        case .stopping: "STOPPING=1"
        }
    }
}
