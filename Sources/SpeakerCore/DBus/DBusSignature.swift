internal import CDBus

/// A validated D-Bus type signature such as `a{sv}` or `sa(ii)`.
///
/// Validation happens once, at construction, so that nothing invalid ever reaches libdbus
/// (which aborts the process on a malformed signature rather than returning an error).
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// Validates `rawValue`; an empty signature (no values) is valid.
    public init(_ rawValue: String) throws(DBusError) {
        guard !rawValue.utf8.contains(0), dbus_signature_validate(rawValue, nil) != 0 else {
            throw .invalidArgument("'\(rawValue)' is not a valid D-Bus signature")
        }
        self.rawValue = rawValue
    }

    init(unchecked rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The single complete types this signature is made of, e.g. `sa{sv}i` → `s`, `a{sv}`, `i`.
    public var completeTypes: [DBusSignature] {
        var result: [DBusSignature] = []
        let bytes = Array(rawValue.utf8)
        var index = 0
        while index < bytes.count {
            let end = Self.endOfCompleteType(bytes, from: index)
            result.append(DBusSignature(unchecked: String(decoding: bytes[index..<end], as: UTF8.self)))
            index = end
        }
        return result
    }

    /// For a dictionary signature `a{kv}`, its key and value signatures.
    var dictionaryParts: (key: DBusSignature, value: DBusSignature)? {
        guard rawValue.hasPrefix("a{"), rawValue.hasSuffix("}") else { return nil }
        let inner = Array(rawValue.utf8.dropFirst(2).dropLast())
        guard let first = inner.first else { return nil }
        return (DBusSignature(unchecked: String(decoding: [first], as: UTF8.self)),
                DBusSignature(unchecked: String(decoding: inner.dropFirst(), as: UTF8.self)))
    }

    /// Index just past the complete type starting at `start` (the signature is already valid).
    private static func endOfCompleteType(_ bytes: [UInt8], from start: Int) -> Int {
        switch bytes[start] {
        case UInt8(ascii: "a"):
            return endOfCompleteType(bytes, from: start + 1)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            var depth = 0
            var index = start
            repeat {
                if bytes[index] == UInt8(ascii: "(") || bytes[index] == UInt8(ascii: "{") { depth += 1 }
                if bytes[index] == UInt8(ascii: ")") || bytes[index] == UInt8(ascii: "}") { depth -= 1 }
                index += 1
            } while depth > 0 && index < bytes.count
            return index
        default:
            return start + 1
        }
    }
}

extension DBusSignature: ExpressibleByStringLiteral {
    /// Literal signatures are written by programmers, so a bad one is a programming error.
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid D-Bus signature literal '\(value)'") }
    }
}

/// A validated D-Bus object path such as `/org/bluez/hci0`.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws(DBusError) {
        guard !rawValue.utf8.contains(0), dbus_validate_path(rawValue, nil) != 0 else {
            throw .invalidArgument("'\(rawValue)' is not a valid D-Bus object path")
        }
        self.rawValue = rawValue
    }

    init(unchecked rawValue: String) { self.rawValue = rawValue }

    public static let root = DBusObjectPath(unchecked: "/")

    public var description: String { rawValue }

    public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether `self` is `ancestor` or lies below it (`/a/b` is under `/a` and under `/`).
    public func isDescendant(ofOrEqualTo ancestor: DBusObjectPath) -> Bool {
        if ancestor.rawValue == "/" || ancestor == self { return true }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// A child path: `/org/bluez` appending `hci0` gives `/org/bluez/hci0`.
    public func appending(_ component: String) throws(DBusError) -> DBusObjectPath {
        try DBusObjectPath(rawValue == "/" ? "/" + component : rawValue + "/" + component)
    }
}

extension DBusObjectPath: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid D-Bus object path literal '\(value)'") }
    }
}
