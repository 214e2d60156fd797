/// A Swift type that can be built from a D-Bus value, with a precise error when the value
/// has another type.
/// A Swift type with a fixed D-Bus signature.
public protocol DBusTyped: Sendable {
    /// The signature values of this type have on the bus.
    static var dbusSignature: DBusSignature { get }
}

public protocol DBusDecodable: DBusTyped {
    /// Builds the value, throwing `DBusError.typeMismatch` (location left empty for the caller
    /// to fill in) when `dbusValue` has another type. Variants are looked through.
    init(dbusValue: DBusValue) throws(DBusError)
}

/// A Swift type that can be written as a D-Bus value.
public protocol DBusEncodable: DBusTyped {
    var dbusValue: DBusValue { get }
}

public typealias DBusRepresentable = DBusDecodable & DBusEncodable

extension DBusValue {
    /// This value as a `T`, e.g. `try value.as(String.self)`; variants are looked through.
    public func `as`<T: DBusDecodable>(_ type: T.Type, at location: String = "") throws(DBusError) -> T {
        do { return try T(dbusValue: self) } catch { throw error.prefixingLocation(location) }
    }

    /// The mismatch error for a value that should have had `expected`'s type.
    func mismatch(expecting expected: DBusSignature) -> DBusError {
        .typeMismatch(expected: expected.rawValue, actual: signatureString, location: "")
    }
}

extension Array where Element == DBusValue {
    /// Argument `index` (0-based) of a message as a `T`; errors name it "argument N" (1-based).
    public func decode<T: DBusDecodable>(_ type: T.Type, at index: Int) throws(DBusError) -> T {
        let location = "argument \(index + 1)"
        guard indices.contains(index) else {
            throw .typeMismatch(expected: T.dbusSignature.rawValue, actual: "nothing", location: location)
        }
        return try self[index].as(T.self, at: location)
    }

    /// The signature of these values side by side, as in a message body.
    public var signature: DBusSignature { DBusSignature(unchecked: map(\.signatureString).joined()) }
}

extension Dictionary where Key == String, Value == DBusValue {
    /// The entry `key` of a property bag as a `T`, or nil when absent; errors name "key 'K'".
    public func decode<T: DBusDecodable>(_ key: String, as type: T.Type) throws(DBusError) -> T? {
        guard let value = self[key] else { return nil }
        return try value.as(T.self, at: "key '\(key)'")
    }
}

// MARK: - The value model itself

extension DBusValue: DBusDecodable, DBusEncodable {
    /// As a member of a container, a `DBusValue` is a variant: `[String: DBusValue]` is `a{sv}`.
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "v") }
    public init(dbusValue: DBusValue) throws(DBusError) { self = dbusValue.unwrappingVariants }
    public var dbusValue: DBusValue { .variant(self) }
}

// MARK: - Basic types

/// Basic types are described once: a signature, a wrapping case and an unwrapping pattern.
protocol DBusBasicConvertible: DBusRepresentable {
    static func extract(_ value: DBusValue) -> Self?
}

extension DBusBasicConvertible {
    public init(dbusValue: DBusValue) throws(DBusError) {
        guard let result = Self.extract(dbusValue.unwrappingVariants) else {
            throw dbusValue.unwrappingVariants.mismatch(expecting: Self.dbusSignature)
        }
        self = result
    }
}

extension UInt8: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "y" }
    public var dbusValue: DBusValue { .byte(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .byte(let x) = v { x } else { nil } }
}
extension Bool: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "b" }
    public var dbusValue: DBusValue { .bool(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .bool(let x) = v { x } else { nil } }
}
extension Int16: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "n" }
    public var dbusValue: DBusValue { .int16(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .int16(let x) = v { x } else { nil } }
}
extension UInt16: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "q" }
    public var dbusValue: DBusValue { .uint16(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .uint16(let x) = v { x } else { nil } }
}
extension Int32: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "i" }
    public var dbusValue: DBusValue { .int32(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .int32(let x) = v { x } else { nil } }
}
extension UInt32: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "u" }
    public var dbusValue: DBusValue { .uint32(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .uint32(let x) = v { x } else { nil } }
}
extension Int64: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "x" }
    public var dbusValue: DBusValue { .int64(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .int64(let x) = v { x } else { nil } }
}
extension UInt64: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "t" }
    public var dbusValue: DBusValue { .uint64(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .uint64(let x) = v { x } else { nil } }
}
extension Double: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "d" }
    public var dbusValue: DBusValue { .double(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .double(let x) = v { x } else { nil } }
}
extension String: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "s" }
    public var dbusValue: DBusValue { .string(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .string(let x) = v { x } else { nil } }
}
extension DBusObjectPath: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "o" }
    public var dbusValue: DBusValue { .objectPath(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .objectPath(let x) = v { x } else { nil } }
}
extension DBusSignature: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "g" }
    public var dbusValue: DBusValue { .signature(self) }
    static func extract(_ v: DBusValue) -> Self? { if case .signature(let x) = v { x } else { nil } }
}
extension DBusUnixFD: DBusBasicConvertible {
    public static var dbusSignature: DBusSignature { "h" }
    public var dbusValue: DBusValue { .unixFD(self) }
    static func extract(_ v: DBusValue) -> DBusUnixFD? { if case .unixFD(let x) = v { x } else { nil } }
}

// MARK: - Containers

extension Array: DBusTyped where Element: DBusTyped {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "a" + Element.dbusSignature.rawValue) }
}

extension Array: DBusDecodable where Element: DBusDecodable {
    public init(dbusValue: DBusValue) throws(DBusError) {
        let value = dbusValue.unwrappingVariants
        guard case .array(_, let items) = value else { throw value.mismatch(expecting: Self.dbusSignature) }
        var result: [Element] = []
        result.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            result.append(try item.as(Element.self, at: "element \(index)"))
        }
        self = result
    }
}

extension Array: DBusEncodable where Element: DBusEncodable {
    public var dbusValue: DBusValue { .array(element: Element.dbusSignature, map(\.dbusValue)) }
}

extension Dictionary: DBusTyped where Key: DBusTyped, Value: DBusTyped {
    public static var dbusSignature: DBusSignature {
        DBusSignature(unchecked: "a{" + Key.dbusSignature.rawValue + Value.dbusSignature.rawValue + "}")
    }
}

extension Dictionary: DBusDecodable where Key: DBusDecodable, Value: DBusDecodable {
    public init(dbusValue: DBusValue) throws(DBusError) {
        let value = dbusValue.unwrappingVariants
        guard case .dictionary(_, _, let entries) = value else { throw value.mismatch(expecting: Self.dbusSignature) }
        var result: [Key: Value] = [:]
        for entry in entries {
            let key = try entry.key.as(Key.self, at: "key")
            let label: String = if case .string(let s) = entry.key { "key '\(s)'" } else { "key \(entry.key)" }
            result[key] = try entry.value.as(Value.self, at: label)
        }
        self = result
    }
}

extension Dictionary: DBusEncodable where Key: DBusEncodable, Value: DBusEncodable {
    /// Entries are written in key-description order so that messages are reproducible.
    public var dbusValue: DBusValue {
        .dictionary(
            key: Key.dbusSignature, value: Value.dbusSignature,
            map { DBusDictionaryEntry(key: $0.key.dbusValue, value: $0.value.dbusValue) }
                .sorted { $0.key.description < $1.key.description })
    }
}
