import DBus
/// The signals from org.bluez the client acts on, decoded from raw `DBusSignal`s.
///
/// Why decode in one place: a malformed signal (wrong types from a buggy or future bluetoothd)
/// is dropped here with a reason, instead of failing somewhere deep in the cache.
enum BlueZSignal: Sendable {
    case interfacesAdded(DBusObjectPath, [String: [String: DBusValue]])
    case interfacesRemoved(DBusObjectPath, [String])
    case propertiesChanged(DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String])
    case disconnected(DBusObjectPath, DisconnectReason)

    /// nil for signals we do not use; throws for ones we use but that have the wrong shape.
    init?(_ signal: DBusSignal) throws(DBusError) {
        switch (signal.interface, signal.member) {
        case (BlueZInterface.objectManager, "InterfacesAdded"):
            self = .interfacesAdded(
                try signal.arguments.decode(DBusObjectPath.self, at: 0),
                try signal.arguments.decode([String: [String: DBusValue]].self, at: 1))
        case (BlueZInterface.objectManager, "InterfacesRemoved"):
            self = .interfacesRemoved(
                try signal.arguments.decode(DBusObjectPath.self, at: 0),
                try signal.arguments.decode([String].self, at: 1))
        case (BlueZInterface.properties, "PropertiesChanged"):
            self = .propertiesChanged(
                signal.path,
                interface: try signal.arguments.decode(String.self, at: 0),
                changed: try signal.arguments.decode([String: DBusValue].self, at: 1),
                invalidated: signal.arguments.count > 2 ? try signal.arguments.decode([String].self, at: 2) : [])
        case (BlueZInterface.device, "Disconnected"):
            self = .disconnected(signal.path, DisconnectReason(dbusName: try signal.arguments.decode(String.self, at: 0)))
        default:
            return nil
        }
    }
}
