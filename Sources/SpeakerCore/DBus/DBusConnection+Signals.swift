/// Signal subscriptions and bus-name tracking.
extension DBusConnection {
    /// Subscribes to the signals matching `rule`. The match rule is on the bus before this
    /// returns, so no signal sent after it returns is missed; it is removed when the stream ends.
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> DBusSignalStream {
        try rule.validate()
        let ruleString = rule.description
        let router = self.router
        let holder = DBusSubscriptionHolder()
        guard let (id, stream) = router.add(rule, onTermination: { holder.subscription?.cancel() }) else {
            throw .disconnected
        }
        let subscription = DBusSubscription { [weak self] in
            router.remove(id)
            guard let self, self.isConnected else { return }
            if let message = try? DBusMessage.methodCall(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", method: "RemoveMatch") {
                try? message.append([.string(ruleString)])
                message.setNoReply()
                self.loop.send(message)
            }
        }
        holder.subscription = subscription
        do {
            _ = try await callBus("AddMatch", [.string(ruleString)])
        } catch {
            router.remove(id)
            throw error
        }
        return DBusSignalStream(base: stream, subscription: subscription)
    }

    /// The owner of `name` (a unique name, or nil when unowned): the current owner first, then
    /// every change (e.g. bluetoothd restarting). Subscribes before asking, so no change is lost.
    public func nameOwnerChanges(for name: String) async throws(DBusError) -> DBusNameOwnerStream {
        try DBusValidation.busName(name)
        let stream = try await signals(matching: DBusMatchRule(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged", arguments: [0: name]))
        let owner = try await nameOwner(of: name)
        return DBusNameOwnerStream(initialOwner: owner, signals: stream)
    }

    /// The unique name currently owning `name`, or nil.
    public func nameOwner(of name: String) async throws(DBusError) -> String? {
        do {
            return try await callBus("GetNameOwner", [.string(name)]).decode(String.self, at: 0)
        } catch .remote(let errorName, _) where errorName == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    /// Emits a signal from `path`, to everyone subscribed (or to `destination` only).
    public func emitSignal(
        path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [], destination: String? = nil
    ) throws(DBusError) {
        let message = try DBusMessage.signal(path: path, interface: interface, member: member)
        if let destination { try message.setDestination(destination) }
        try message.append(arguments)
        loop.send(message)
    }
}

/// Lets the stream's termination handler reach the subscription created after it.
final class DBusSubscriptionHolder: @unchecked Sendable {
    // Written once, before the stream is handed out; read only on termination afterwards.
    var subscription: DBusSubscription?
}
