/// `org.freedesktop.DBus.Properties` for exported objects: Get, GetAll and Set answered from
/// the object's declarations and values; PropertiesChanged emitted on every change.
enum DBusPropertiesHandler {
    static let interface = "org.freedesktop.DBus.Properties"

    static func handle(_ call: DBusIncomingCall, member: String, object: DBusObject, path: DBusObjectPath) {
        let arguments = call.message.arguments
        let signature = call.message.signature
        switch (member, signature) {
        case ("Get", "ss"):
            guard let (interface, property) = lookup(call, object, arguments) else { return }
            guard property.access != .write else {
                return call.replyError(DBusError.Name.failed, "\(interface.name).\(property.name) is write-only")
            }
            call.reply([.variant(object.property(property.name, of: interface.name) ?? property.initialValue)])
        case ("GetAll", "s"):
            guard case .string(let name) = arguments[0] else { return }
            guard let interface = object.interface(named: name) else {
                return call.replyError(DBusError.Name.unknownInterface, "\(path) has no interface \(name)")
            }
            call.reply([.properties(object.readableProperties(of: interface))])
        case ("Set", "ssv"):
            guard let (interface, property) = lookup(call, object, arguments),
                  case .variant(let value) = arguments[2] else { return }
            guard property.access != .read else {
                return call.replyError(DBusError.Name.propertyReadOnly, "\(interface.name).\(property.name) is read-only")
            }
            guard value.signature == property.signature else {
                return call.replyError(DBusError.Name.invalidArgs,
                                       "\(interface.name).\(property.name) has type '\(property.signature)', got '\(value.signature)'")
            }
            do {
                try property.validateSet?(value)
                try object.setProperty(property.name, of: interface.name, to: value)
                call.reply([])
            } catch {
                call.replyError(for: error)
            }
        case ("Get", _), ("GetAll", _), ("Set", _):
            call.replyError(DBusError.Name.invalidArgs, "wrong arguments '\(signature)' for \(interface).\(member)")
        default:
            call.replyError(DBusError.Name.unknownMethod, "\(interface) has no method \(member)")
        }
    }

    private static func lookup(
        _ call: DBusIncomingCall, _ object: DBusObject, _ arguments: [DBusValue]
    ) -> (DBusInterface, DBusProperty)? {
        guard case .string(let interfaceName) = arguments[0], case .string(let name) = arguments[1] else { return nil }
        guard let interface = object.interface(named: interfaceName) else {
            call.replyError(DBusError.Name.unknownInterface, "no interface \(interfaceName)")
            return nil
        }
        guard let property = interface.properties.first(where: { $0.name == name }) else {
            call.replyError(DBusError.Name.unknownProperty, "\(interfaceName) has no property \(name)")
            return nil
        }
        return (interface, property)
    }

    /// The PropertiesChanged signal for `changed` values and `invalidated` names.
    static func changedSignal(
        path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) throws(DBusError) -> DBusMessage {
        let message = try DBusMessage.signal(path: path, interface: Self.interface, member: "PropertiesChanged")
        try message.append([.string(interface), .properties(changed), .strings(invalidated)])
        return message
    }
}
