internal import CDBus

/// Writing `DBusValue`s into a libdbus message and reading them back out.
///
/// Callers validate with `DBusValidation.body` first, so appending can only fail when memory
/// runs out; reading trusts libdbus, which has already validated the incoming message.
enum DBusMarshalling {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            guard append(value, to: &iter) else { throw .invalidArgument("out of memory while building a D-Bus message") }
        }
    }

    static func read(_ message: OpaquePointer) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != DBusTypeCode.invalid {
            values.append(read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    // MARK: - Writing

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return basic(v, DBusTypeCode.byte, &iter)
        case .bool(let v): return basic(dbus_bool_t(v ? 1 : 0), DBusTypeCode.boolean, &iter)
        case .int16(let v): return basic(v, DBusTypeCode.int16, &iter)
        case .uint16(let v): return basic(v, DBusTypeCode.uint16, &iter)
        case .int32(let v): return basic(v, DBusTypeCode.int32, &iter)
        case .uint32(let v): return basic(v, DBusTypeCode.uint32, &iter)
        case .int64(let v): return basic(v, DBusTypeCode.int64, &iter)
        case .uint64(let v): return basic(v, DBusTypeCode.uint64, &iter)
        case .double(let v): return basic(v, DBusTypeCode.double, &iter)
        case .unixFD(let fd): return basic(fd.rawValue, DBusTypeCode.unixFD, &iter)
        case .string(let v): return text(v, DBusTypeCode.string, &iter)
        case .objectPath(let v): return text(v.rawValue, DBusTypeCode.objectPath, &iter)
        case .signature(let v): return text(v.rawValue, DBusTypeCode.signature, &iter)
        case .array(let element, let items):
            return container(DBusTypeCode.array, element.rawValue, &iter) { sub in
                items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            return container(DBusTypeCode.array, "{" + key.rawValue + valueType.rawValue + "}", &iter) { sub in
                entries.allSatisfy { entry in
                    container(DBusTypeCode.dictEntry, nil, &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return container(DBusTypeCode.structure, nil, &iter) { sub in fields.allSatisfy { append($0, to: &sub) } }
        case .variant(let inner):
            return container(DBusTypeCode.variant, inner.signatureString, &iter) { sub in append(inner, to: &sub) }
        }
    }

    private static func basic<T: BitwiseCopyable>(_ value: T, _ type: Int32, _ iter: inout DBusMessageIter) -> Bool {
        var copy = value
        return dbus_message_iter_append_basic(&iter, type, &copy) != 0
    }

    private static func text(_ value: String, _ type: Int32, _ iter: inout DBusMessageIter) -> Bool {
        value.withCString { pointer in
            var p: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iter, type, &p) != 0
        }
    }

    private static func container(
        _ type: Int32, _ contained: String?, _ iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool = if let contained {
            contained.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) != 0 }
        } else {
            dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    // MARK: - Reading

    private static func read(_ iter: inout DBusMessageIter) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case DBusTypeCode.byte: return .byte(get(&iter, UInt8(0)))
        case DBusTypeCode.boolean: return .bool(get(&iter, dbus_bool_t(0)) != 0)
        case DBusTypeCode.int16: return .int16(get(&iter, Int16(0)))
        case DBusTypeCode.uint16: return .uint16(get(&iter, UInt16(0)))
        case DBusTypeCode.int32: return .int32(get(&iter, Int32(0)))
        case DBusTypeCode.uint32: return .uint32(get(&iter, UInt32(0)))
        case DBusTypeCode.int64: return .int64(get(&iter, Int64(0)))
        case DBusTypeCode.uint64: return .uint64(get(&iter, UInt64(0)))
        case DBusTypeCode.double: return .double(get(&iter, Double(0)))
        case DBusTypeCode.unixFD: return .unixFD(DBusUnixFD(taking: get(&iter, Int32(-1))))
        case DBusTypeCode.string: return .string(getText(&iter))
        case DBusTypeCode.objectPath: return .objectPath(DBusObjectPath(unchecked: getText(&iter)))
        case DBusTypeCode.signature: return .signature(DBusSignature(unchecked: getText(&iter)))
        case DBusTypeCode.array:
            let signature = currentSignature(&iter)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            if let (key, value) = signature.dictionaryParts {
                var entries: [DBusDictionaryEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == DBusTypeCode.dictEntry {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let k = read(&pair)
                    dbus_message_iter_next(&pair)
                    entries.append(DBusDictionaryEntry(key: k, value: read(&pair)))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: key, value: value, entries)
            }
            return .array(element: DBusSignature(unchecked: String(signature.rawValue.dropFirst())), readAll(&sub))
        case DBusTypeCode.structure:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(readAll(&sub))
        case DBusTypeCode.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(read(&sub))
        default:
            // libdbus validated the message, so no other type code can appear here.
            preconditionFailure("libdbus returned unknown type code \(type)")
        }
    }

    private static func readAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != DBusTypeCode.invalid {
            values.append(read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func get<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func getText(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func currentSignature(_ iter: inout DBusMessageIter) -> DBusSignature {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return DBusSignature(unchecked: "") }
        defer { dbus_free(raw) }
        return DBusSignature(unchecked: String(cString: raw))
    }
}
