import Synchronization

/// Set once something in the background has happened (a job ended, a call returned), so a test
/// can look without waiting, or wait for it with a bound (`eventually`).
public final class DoneFlag: Sendable {
    private let done = Mutex(false)

    public init() {}

    public var isSet: Bool { done.withLock { $0 } }
    public func set() { done.withLock { $0 = true } }
}
