/// `org.freedesktop.DBus.ObjectManager`: GetManagedObjects over the objects below a manager
/// path, and InterfacesAdded / InterfacesRemoved as objects come and go.
enum DBusObjectManagerSupport {
    static let interface = "org.freedesktop.DBus.ObjectManager"

    /// `a{sa{sv}}`: each interface of `object` with its readable properties.
    static func interfacesAndProperties(_ object: DBusObject) -> DBusValue {
        .dictionary(key: "s", value: "a{sv}", object.interfaces.map { interface in
            DBusDictionaryEntry(key: .string(interface.name), value: .properties(object.readableProperties(of: interface)))
        })
    }

    /// `a{oa{sa{sv}}}` for GetManagedObjects.
    static func managedObjects(_ objects: [(DBusObjectPath, DBusObject)]) -> DBusValue {
        .dictionary(key: "o", value: "a{sa{sv}}", objects.sorted { $0.0 < $1.0 }.map { path, object in
            DBusDictionaryEntry(key: .objectPath(path), value: interfacesAndProperties(object))
        })
    }

    static func interfacesAdded(manager: DBusObjectPath, path: DBusObjectPath, object: DBusObject) throws(DBusError) -> DBusMessage {
        let message = try DBusMessage.signal(path: manager, interface: interface, member: "InterfacesAdded")
        try message.append([.objectPath(path), interfacesAndProperties(object)])
        return message
    }

    static func interfacesRemoved(manager: DBusObjectPath, path: DBusObjectPath, object: DBusObject) throws(DBusError) -> DBusMessage {
        let message = try DBusMessage.signal(path: manager, interface: interface, member: "InterfacesRemoved")
        try message.append([.objectPath(path), .strings(object.interfaces.map(\.name))])
        return message
    }
}
