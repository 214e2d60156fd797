import Synchronization

/// Lines collected from several tasks (log lines, outcomes), for a test to read afterwards.
public final class Lines: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    public func withLock<T>(_ body: (inout [String]) -> T) -> T { lines.withLock { body(&$0) } }
}
