import DBus
/// BlueZ's D-Bus names, in one place.
public enum BlueZInterface {
    public static let service = "org.bluez"
    public static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let agent = "org.bluez.Agent1"
    static let agentManager = "org.bluez.AgentManager1"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"
}

/// Object-path helpers. Paths are only ever derived from what BlueZ reports right now, never kept
/// across an adapter re-plug or a bluetoothd restart.
public enum BlueZPaths {
    /// `/org/bluez`: the AgentManager1 object.
    static let manager: DBusObjectPath = "/org/bluez"

    /// `hci0` from `/org/bluez/hci0`.
    public static func lastElement(of path: DBusObjectPath) -> String {
        String(path.rawValue.split(separator: "/").last ?? "")
    }

    /// `hci0` from `/org/bluez/hci0/dev_11_22_33_44_55_66`.
    static func adapterName(ofDevice path: DBusObjectPath) -> String {
        let elements = path.rawValue.split(separator: "/")
        return elements.count >= 2 ? String(elements[elements.count - 2]) : ""
    }

    /// The adapter path a device path lies under.
    static func adapterPath(ofDevice path: DBusObjectPath) -> DBusObjectPath? {
        guard let slash = path.rawValue.lastIndex(of: "/"), slash != path.rawValue.startIndex else { return nil }
        return try? DBusObjectPath(String(path.rawValue[..<slash]))
    }
}

extension BlueZPaths {
    /// The address BlueZ encoded in a device path (`dev_11_22_33_44_55_66`), when it did.
    static func address(ofDevice path: DBusObjectPath) -> BluetoothAddress? {
        let element = lastElement(of: path)
        guard element.hasPrefix("dev_") else { return nil }
        return try? BluetoothAddress(String(element.dropFirst(4).map { $0 == "_" ? ":" : $0 }))
    }
}
