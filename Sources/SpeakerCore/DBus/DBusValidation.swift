internal import CDBus

/// Checks run in Swift before anything reaches libdbus, which aborts the whole process on
/// invalid input instead of reporting an error. Every public entry point goes through these.
enum DBusValidation {
    static func busName(_ name: String) throws(DBusError) {
        guard !name.utf8.contains(0), dbus_validate_bus_name(name, nil) != 0 else {
            throw .invalidArgument("'\(name)' is not a valid D-Bus bus name")
        }
    }

    static func interface(_ name: String) throws(DBusError) {
        guard !name.utf8.contains(0), dbus_validate_interface(name, nil) != 0 else {
            throw .invalidArgument("'\(name)' is not a valid D-Bus interface name")
        }
    }

    static func member(_ name: String) throws(DBusError) {
        guard !name.utf8.contains(0), dbus_validate_member(name, nil) != 0 else {
            throw .invalidArgument("'\(name)' is not a valid D-Bus member name")
        }
    }

    static func errorName(_ name: String) throws(DBusError) {
        guard !name.utf8.contains(0), dbus_validate_error_name(name, nil) != 0 else {
            throw .invalidArgument("'\(name)' is not a valid D-Bus error name")
        }
    }

    static func string(_ value: String) throws(DBusError) {
        guard !value.utf8.contains(0), dbus_validate_utf8(value, nil) != 0 else {
            throw .invalidArgument("a D-Bus string cannot contain NUL characters or invalid UTF-8")
        }
    }

    /// Validates a whole message body: each value's signature is a valid single complete type
    /// (depth and length limits included) and every container agrees with its declared types.
    static func body(_ values: [DBusValue]) throws(DBusError) {
        for (index, value) in values.enumerated() {
            let signature = value.signatureString
            guard dbus_signature_validate_single(signature, nil) != 0 else {
                throw .invalidArgument("argument \(index + 1) has the invalid D-Bus signature '\(signature)'")
            }
            do { try consistent(value) } catch { throw error.prefixingLocation("argument \(index + 1)") }
        }
    }

    private static func consistent(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .string(let s): try string(s)
        case .array(let element, let items):
            for (index, item) in items.enumerated() where item.signatureString != element.rawValue {
                throw DBusError.typeMismatch(expected: element.rawValue, actual: item.signatureString, location: "element \(index)")
            }
            for (index, item) in items.enumerated() {
                do { try consistent(item) } catch { throw error.prefixingLocation("element \(index)") }
            }
        case .dictionary(let key, let valueType, let entries):
            for entry in entries {
                if entry.key.signatureString != key.rawValue {
                    throw DBusError.typeMismatch(expected: key.rawValue, actual: entry.key.signatureString, location: "key \(entry.key)")
                }
                if entry.value.signatureString != valueType.rawValue {
                    throw DBusError.typeMismatch(expected: valueType.rawValue, actual: entry.value.signatureString, location: "key \(entry.key)")
                }
                try consistent(entry.key)
                do { try consistent(entry.value) } catch { throw error.prefixingLocation("key \(entry.key)") }
            }
        case .structure(let fields):
            for (index, field) in fields.enumerated() {
                do { try consistent(field) } catch { throw error.prefixingLocation("field \(index + 1)") }
            }
        case .variant(let inner):
            guard dbus_signature_validate_single(inner.signatureString, nil) != 0 else {
                throw .invalidArgument("a variant holds a value with the invalid signature '\(inner.signatureString)'")
            }
            try consistent(inner)
        default:
            break
        }
    }
}
