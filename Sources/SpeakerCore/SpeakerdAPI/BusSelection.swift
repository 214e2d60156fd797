/// Which message bus speakerd serves its API on and reaches BlueZ through.
public enum BusSelection: Equatable, Sendable, CustomStringConvertible {
    /// The system bus; `DBUS_SYSTEM_BUS_ADDRESS` overrides its default socket.
    case system
    /// The caller's session bus (development and tests).
    case session
    /// An explicit D-Bus address such as `unix:path=/tmp/bus`.
    case address(String)

    /// Parses `system`, `session` or a D-Bus address (anything containing `:` and `=`).
    public init(parsing text: String) throws(DaemonSettingError) {
        switch text {
        case "system": self = .system
        case "session": self = .session
        case let other where other.contains(":" as Character) && other.contains("=" as Character): self = .address(other)
        default:
            throw DaemonSettingError(setting: "bus", value: text,
                                     expected: "system, session or a D-Bus address such as unix:path=/run/bus")
        }
    }

    public var description: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
    }
}

/// A value that does not fit its setting; the caller adds where it came from (file:line or flag).
public struct DaemonSettingError: Error, Equatable, Sendable, CustomStringConvertible {
    public let setting: String
    public let value: String
    public let expected: String

    public init(setting: String, value: String, expected: String) {
        (self.setting, self.value, self.expected) = (setting, value, expected)
    }

    public var description: String {
        "bad value '\(value)' for \(setting) (expected \(expected))"
    }
}
