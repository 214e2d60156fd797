/// Notices callers leaving the bus, so the calls they left behind can be cancelled.
///
/// A connection that exports objects asks the bus for every NameOwnerChanged that ends a
/// unique name (`arg2=''`: the new owner is nobody). The match is sent without waiting for
/// its reply, before anything else the exporter does next (such as taking its well-known
/// name), and the bus handles one connection's messages in order: no caller can reach the
/// object before the match is in place.
enum DBusCallerWatch {
    static let rule = "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
        + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''"

    static func start(on loop: DBusEventLoop) {
        guard let message = try? DBusMessage.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", method: "AddMatch") else { return }
        try? message.append([.string(rule)])
        message.setNoReply()
        loop.send(message)
    }

    /// The unique name whose connection just closed, if `message` says so.
    static func callerWhoLeft(_ message: DBusMessage) -> String? {
        guard message.member == "NameOwnerChanged", message.sender == "org.freedesktop.DBus",
              message.interface == "org.freedesktop.DBus" else { return nil }
        let values = message.arguments
        guard values.count == 3, case .string(let name) = values[0], name.hasPrefix(":"),
              case .string(let newOwner) = values[2], newOwner.isEmpty else { return nil }
        return name
    }
}
