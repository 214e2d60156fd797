import Synchronization

/// An ordered, thread-safe list of what happened, for order assertions.
public final class Journal: Sendable {
    private let entries = Mutex<[String]>([])

    public init() {}

    public func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    public var all: [String] { entries.withLock { $0 } }
}
