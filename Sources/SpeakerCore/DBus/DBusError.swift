/// Everything that can go wrong on the bus, as one typed error with a human sentence.
public enum DBusError: Error, Sendable, Hashable {
    /// The peer answered with a D-Bus error reply (e.g. `org.bluez.Error.Failed`).
    case remote(name: String, message: String)
    /// No reply arrived within the call's timeout.
    case timeout(method: String, milliseconds: Int)
    /// The calling task was cancelled before the reply arrived.
    case cancelled
    /// The connection to the bus is closed or was lost.
    case disconnected
    /// A value did not have the expected type. `location` says where, e.g. "argument 2 → key 'Connected'".
    case typeMismatch(expected: String, actual: String, location: String)
    /// A name, path, string or signature that D-Bus does not allow.
    case invalidArgument(String)
    /// The bus could not be reached or refused us.
    case connectionFailed(address: String, reason: String)
    /// `requestName` found the name already owned by another connection.
    case nameTaken(String)
    /// An object is already exported at this path on this connection.
    case pathInUse(DBusObjectPath)

    /// Standard D-Bus error names used by the exported-object machinery.
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    }

    /// The same mismatch seen from one level further out, e.g. prefixing "argument 2".
    func prefixingLocation(_ outer: String) -> DBusError {
        guard case .typeMismatch(let expected, let actual, let location) = self else { return self }
        return .typeMismatch(expected: expected, actual: actual, location: location.isEmpty ? outer : outer + " → " + location)
    }

    /// The D-Bus error name and message this error becomes when a method handler throws it.
    var replyNameAndMessage: (name: String, message: String) {
        switch self {
        case .remote(let name, let message): (name, message)
        case .typeMismatch, .invalidArgument: (Name.invalidArgs, description)
        default: (Name.failed, description)
        }
    }
}

extension DBusError {
    /// The line of a peer's error message that says what went wrong, for a one-line error or log:
    /// a service written in Python (python-dbusmock) sends a whole traceback for an exception it
    /// did not expect, whose last line is the exception; anything else, its first line. Bounded,
    /// since a peer chooses the message.
    public static func gist(of message: String) -> String {
        let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingBlanks }.filter { !$0.isEmpty }
        var line = (message.hasPrefix("Traceback (") ? lines.last : lines.first) ?? ""
        if line.hasPrefix("dbus.exceptions.DBusException: ") { line = line.dropFirst("dbus.exceptions.DBusException: ".count) }
        return line.count > maxGistCharacters ? String(line.prefix(maxGistCharacters)) + "…" : String(line)
    }

    static let maxGistCharacters = 240
}

extension Substring {
    fileprivate var trimmingBlanks: Substring {
        guard let first = firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return self[first...last]
    }
}

extension DBusError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .remote(let name, let message):
            message.isEmpty ? name : "\(name): \(Self.gist(of: message))"
        case .timeout(let method, let milliseconds):
            "no reply to \(method) within \(milliseconds) ms (is the service running and responsive?)"
        case .cancelled:
            "the D-Bus call was cancelled"
        case .disconnected:
            "the D-Bus connection is closed (the bus went away or the connection was closed)"
        case .typeMismatch(let expected, let actual, let location):
            "type mismatch\(location.isEmpty ? "" : " at \(location)"): expected '\(expected)', got '\(actual)'"
        case .invalidArgument(let reason):
            reason
        case .connectionFailed(let address, let reason):
            "cannot connect to the D-Bus bus at \(address): \(reason)"
        case .nameTaken(let name):
            "the bus name \(name) is already owned by another process (is another instance running?)"
        case .pathInUse(let path):
            "an object is already exported at \(path) on this connection"
        }
    }
}

/// An error a method handler can throw to choose the D-Bus error name its caller sees.
public protocol DBusErrorConvertible: Error {
    /// A D-Bus error name such as `com.example.Error.NotFound`.
    var dbusErrorName: String { get }
    var dbusErrorMessage: String { get }
}
