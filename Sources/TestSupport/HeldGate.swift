import Synchronization

/// Holds whoever waits on it until the test opens it, so "a method that never replies" or "a
/// start-up step that never finishes" needs no sleep. Waiting ignores cancellation on purpose:
/// the thing held must stay held until the test says otherwise.
public final class HeldGate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    public func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// How many are held right now.
    public var waiting: Int { state.withLock { $0.waiters.count } }
}
