import Synchronization

/// The live signal subscriptions of one connection; the I/O thread's message filter hands
/// every incoming signal to `deliver`, which yields it to each subscription whose rule matches.
final class DBusSignalRouter: Sendable {
    private struct Subscription {
        let rule: DBusMatchRule
        let continuation: AsyncStream<DBusSignal>.Continuation
    }

    /// What we know about who owns a well-known name some rule names as its sender.
    private struct Owner {
        var subscribers = 0
        /// nil until the first GetNameOwner reply or NameOwnerChanged; then the unique name ("" = none).
        var owner: String?
        /// The bus's serial of the message that told us, so an older answer never overwrites a newer one.
        var serial: UInt32 = 0
    }

    private struct State {
        var subscriptions: [UInt64: Subscription] = [:]
        var owners: [String: Owner] = [:]
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

    /// Starts tracking the owner of a well-known sender name; true for the first subscriber,
    /// which then adds the NameOwnerChanged match and asks GetNameOwner.
    func retainOwnerTracking(_ name: String) -> Bool {
        state.withLock { state in
            state.owners[name, default: Owner()].subscribers += 1
            return state.owners[name]?.subscribers == 1
        }
    }

    /// Stops tracking; true for the last subscriber, which then removes the match.
    func releaseOwnerTracking(_ name: String) -> Bool {
        state.withLock { state in
            guard var entry = state.owners[name] else { return false }
            entry.subscribers -= 1
            state.owners[name] = entry.subscribers > 0 ? entry : nil
            return entry.subscribers == 0
        }
    }

    /// Records the owner of `name` as of the bus message with `serial`.
    func updateOwner(_ name: String, to owner: String, serial: UInt32) {
        state.withLock { state in
            guard var entry = state.owners[name], entry.owner == nil || serial > entry.serial else { return }
            entry.owner = owner
            entry.serial = serial
            state.owners[name] = entry
        }
    }

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
        if sender == "org.freedesktop.DBus", member == "NameOwnerChanged",
           case let values = arguments(), values.count == 3,
           case .string(let name) = values[0], case .string(let newOwner) = values[2] {
            updateOwner(name, to: newOwner, serial: message.serial)
        }
        let targets = state.withLock { state in
            state.subscriptions.values.filter { subscription in
                // A well-known sender: the bus resolved it, and we check against the owner we track.
                if let wanted = subscription.rule.sender, let known = state.owners[wanted]?.owner, known != sender {
                    return false
                }
                return subscription.rule.matches(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
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
