import Synchronization

/// An ordered, thread-safe list of what happened (events, log lines, outcomes) collected from
/// several tasks, for a test to read afterwards.
public final class Journal: Sendable {
    private let entries = Mutex<[String]>([])

    public init() {}

    public func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    public var all: [String] { entries.withLock { $0 } }
    /// The entries that contain `text`, in order.
    public func containing(_ text: String) -> [String] { all.filter { $0.contains(text) } }
    public func withLock<T>(_ body: (inout [String]) -> T) -> T { entries.withLock { body(&$0) } }
}
