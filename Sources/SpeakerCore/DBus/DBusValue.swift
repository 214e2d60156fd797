/// One D-Bus value of any type: the single value model every part of speakerd speaks.
///
/// Containers carry their element signatures so that an empty array or dictionary keeps its
/// type on the wire (`as` stays `as` even with no strings in it). Variants nest freely.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusUnixFD)
    /// An array whose elements all have the signature `element` (not a dictionary).
    case array(element: DBusSignature, [DBusValue])
    /// A dictionary `a{kv}`; entries keep their wire order.
    case dictionary(key: DBusSignature, value: DBusSignature, [DBusDictionaryEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The complete signature of this value, e.g. `a{sv}` or `(ia(sv))`.
    public var signature: DBusSignature {
        DBusSignature(unchecked: signatureString)
    }

    var signatureString: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element.rawValue
        case .dictionary(let key, let value, _): "a{" + key.rawValue + value.rawValue + "}"
        case .structure(let fields): "(" + fields.map(\.signatureString).joined() + ")"
        case .variant: "v"
        }
    }

    /// The value inside any number of variant wrappers.
    public var unwrappingVariants: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }
}

/// One `{key, value}` entry of a D-Bus dictionary.
public struct DBusDictionaryEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

extension DBusValue: CustomStringConvertible {
    /// A compact, readable rendering for logs and error messages.
    public var description: String {
        switch self {
        case .byte(let v): "byte \(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "int16 \(v)"
        case .uint16(let v): "uint16 \(v)"
        case .int32(let v): "int32 \(v)"
        case .uint32(let v): "uint32 \(v)"
        case .int64(let v): "int64 \(v)"
        case .uint64(let v): "uint64 \(v)"
        case .double(let v): "double \(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): "path \(v.rawValue)"
        case .signature(let v): "signature \(v.rawValue)"
        case .unixFD(let v): "fd \(v.rawValue)"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            "{" + entries.map { "\($0.key.description): \($0.value.description)" }.joined(separator: ", ") + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): "<\(inner.description)>"
        }
    }
}

// MARK: - Convenience constructors

extension DBusValue {
    /// An `as` array.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: DBusSignature(unchecked: "s"), values.map(DBusValue.string))
    }

    /// An `a{sv}` dictionary, the shape of every property bag on the bus.
    public static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: DBusSignature(unchecked: "s"), value: DBusSignature(unchecked: "v"),
            values.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value)) })
    }
}
