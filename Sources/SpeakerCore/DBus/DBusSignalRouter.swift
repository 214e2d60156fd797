import Synchronization

/// The live signal subscriptions of one connection; the I/O thread's message filter hands
/// every incoming signal to `deliver`, which yields it to each subscription whose rule matches.
final class DBusSignalRouter: Sendable {
    private struct Subscription {
        let rule: DBusMatchRule
        let continuation: AsyncStream<DBusSignal>.Continuation
    }

    private struct State {
        var subscriptions: [UInt64: Subscription] = [:]
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())

    /// Registers a subscription; nil when the connection is already closed.
    func add(_ rule: DBusMatchRule, onTermination: @escaping @Sendable () -> Void) -> (UInt64, AsyncStream<DBusSignal>)? {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusSignal.self, bufferingPolicy: .unbounded)
        continuation.onTermination = { _ in onTermination() }
        let id = state.withLock { state -> UInt64? in
            guard !state.closed else { return nil }
            state.nextID += 1
            state.subscriptions[state.nextID] = Subscription(rule: rule, continuation: continuation)
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return nil
        }
        return (id, stream)
    }

    /// Removes a subscription and ends its stream; true if it was still registered.
    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        let removed = state.withLock { $0.subscriptions.removeValue(forKey: id) }
        removed?.continuation.finish()
        return removed != nil
    }

    var count: Int { state.withLock { $0.subscriptions.count } }

    /// I/O thread: routes one signal message. Arguments are decoded once, only if some
    /// subscription's header fields match.
    func deliver(_ message: DBusMessage) {
        let sender = message.sender
        let path = message.path
        let interface = message.interface
        let member = message.member
        var decoded: [DBusValue]?
        func arguments() -> [DBusValue] {
            if let decoded { return decoded }
            let values = message.arguments
            decoded = values
            return values
        }
        let targets = state.withLock { state in
            state.subscriptions.values.filter {
                $0.rule.matches(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
            }.map(\.continuation)
        }
        guard !targets.isEmpty, let path, let interface, let member else { return }
        let signal = DBusSignal(sender: sender ?? "", path: path, interface: interface, member: member, arguments: arguments())
        for continuation in targets { continuation.yield(signal) }
    }

    /// The connection is gone: every stream ends and new subscriptions are refused.
    func closeAll() {
        let all = state.withLock { state in
            state.closed = true
            defer { state.subscriptions = [:] }
            return Array(state.subscriptions.values)
        }
        for subscription in all { subscription.continuation.finish() }
    }
}
