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
        let trackedSender = rule.sender.flatMap { $0.hasPrefix(":") || $0 == "org.freedesktop.DBus" ? nil : $0 }
        let subscription = DBusSubscription { [weak self] in
            router.remove(id)
            let lastTracker = trackedSender.map { router.releaseOwnerTracking($0) } ?? false
            guard let self, self.isConnected else { return }
            self.removeMatch(ruleString)
            if lastTracker, let trackedSender { self.removeMatch(Self.ownerRule(trackedSender)) }
        }
        holder.subscription = subscription
        do {
            if let trackedSender, router.retainOwnerTracking(trackedSender) {
                try await trackOwner(of: trackedSender)
            }
            _ = try await callBus("AddMatch", [.string(ruleString)])
        } catch {
            subscription.cancel()
            throw error
        }
        return DBusSignalStream(base: stream, subscription: subscription)
    }

    /// Follows the owner of a well-known sender name so that each subscription only sees
    /// signals from the name's current owner, even when other rules let the same signal in.
    private func trackOwner(of name: String) async throws(DBusError) {
        _ = try await callBus("AddMatch", [.string(Self.ownerRule(name))])
        do {
            let reply = try await callReturningMessage(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                method: "GetNameOwner", arguments: [.string(name)], timeout: .seconds(25))
            router.updateOwner(name, to: try reply.arguments.decode(String.self, at: 0), serial: reply.serial)
        } catch .remote(let errorName, _) where errorName == DBusError.Name.nameHasNoOwner {
            router.updateOwner(name, to: "", serial: 0)
        }
    }

    static func ownerRule(_ name: String) -> String {
        DBusMatchRule(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                      member: "NameOwnerChanged", arguments: [0: name]).description
    }

    private func removeMatch(_ rule: String) {
        guard let message = try? DBusMessage.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", method: "RemoveMatch") else { return }
        try? message.append([.string(rule)])
        message.setNoReply()
        loop.send(message)
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

/// Lets the stream's termination handler reach the subscription created after it. Weak, so
/// that releasing the stream releases the subscription (whose deinit removes the match rule).
final class DBusSubscriptionHolder: @unchecked Sendable {
    // Written once, before the stream is handed out; read only on termination afterwards.
    weak var subscription: DBusSubscription?
}
