import Glibc

/// Which bus to connect to.
public enum BusAddress: Sendable, Hashable, CustomStringConvertible {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` when set (tests point it at a private bus),
    /// otherwise the standard socket.
    case system
    /// The session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    case session
    /// An explicit D-Bus address such as `unix:path=/tmp/bus`.
    case address(String)

    public static let defaultSystemAddress = "unix:path=/run/dbus/system_bus_socket"

    /// Parses the `--bus` flag's forms: `system`, `session`, or an address.
    public init(flag: String) {
        switch flag {
        case "system": self = .system
        case "session": self = .session
        default: self = .address(flag)
        }
    }

    /// The concrete address string, read from the environment at the time of the call.
    public func resolve() throws(DBusError) -> String {
        try resolve { name in getenv(name).map { String(cString: $0) } }
    }

    /// The concrete address, with the environment looked up through `environment`.
    public func resolve(environment: (String) -> String?) throws(DBusError) -> String {
        switch self {
        case .system:
            if let value = environment("DBUS_SYSTEM_BUS_ADDRESS"), !value.isEmpty { return value }
            return Self.defaultSystemAddress
        case .session:
            guard let value = environment("DBUS_SESSION_BUS_ADDRESS"), !value.isEmpty else {
                throw .connectionFailed(address: "session bus", reason: "DBUS_SESSION_BUS_ADDRESS is not set")
            }
            return value
        case .address(let address):
            guard !address.isEmpty, !address.utf8.contains(0), address.contains(":" as Character) else {
                throw .connectionFailed(address: address, reason: "not a D-Bus address (expected e.g. unix:path=/run/dbus/system_bus_socket)")
            }
            return address
        }
    }

    public var description: String {
        switch self {
        case .system: "system bus"
        case .session: "session bus"
        case .address(let address): address
        }
    }
}
