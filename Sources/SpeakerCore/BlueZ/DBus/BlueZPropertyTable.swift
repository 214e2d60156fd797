import DBus
/// One BlueZ property declared once: its D-Bus name, its D-Bus type, and where it lands in a model.
///
/// Why a table: the same declaration decodes `GetManagedObjects`, `InterfacesAdded` and every
/// `PropertiesChanged`, and handles invalidation. A property whose value has the wrong type is
/// skipped and reported, never fatal: python-dbusmock's stock template sends `ManufacturerData`
/// as `aa{qv}`, and a bluetoothd from the future may change a type; one odd property must not
/// hide a speaker.
struct BlueZProperty<Model>: Sendable {
    let name: String
    /// The D-Bus signature we expect, for error messages and tests.
    let signature: String
    let apply: @Sendable (inout Model, DBusValue) throws(DBusError) -> Void
    let invalidate: @Sendable (inout Model) -> Void

    /// A property held as an optional: absent or invalidated means `nil`.
    static func optional<T: DBusDecodable>(_ name: String, _ keyPath: WritableKeyPath<Model, T?> & Sendable) -> Self {
        BlueZProperty(
            name: name, signature: T.dbusSignature.rawValue,
            apply: { model, value throws(DBusError) in model[keyPath: keyPath] = try value.as(T.self) },
            invalidate: { $0[keyPath: keyPath] = nil })
    }

    /// A property with a documented default (BlueZ's `false` for flags, `[]` for UUIDs).
    static func value<T: DBusDecodable>(_ name: String, _ keyPath: WritableKeyPath<Model, T> & Sendable, default defaultValue: T) -> Self {
        BlueZProperty(
            name: name, signature: T.dbusSignature.rawValue,
            apply: { model, value throws(DBusError) in model[keyPath: keyPath] = try value.as(T.self) },
            invalidate: { $0[keyPath: keyPath] = defaultValue })
    }

    /// A property that needs its own conversion (addresses, enums, nested variants).
    static func custom(
        _ name: String, signature: String,
        apply: @escaping @Sendable (inout Model, DBusValue) throws(DBusError) -> Void,
        invalidate: @escaping @Sendable (inout Model) -> Void
    ) -> Self {
        BlueZProperty(name: name, signature: signature, apply: apply, invalidate: invalidate)
    }
}

/// All properties of one interface, looked up by name.
struct BlueZPropertyTable<Model>: Sendable {
    let interface: String
    let byName: [String: BlueZProperty<Model>]

    init(interface: String, _ properties: [BlueZProperty<Model>]) {
        self.interface = interface
        self.byName = Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Applies a property bag (a{sv}) to a model. Unknown properties are ignored (BlueZ adds new
    /// ones often); mistyped ones are left unchanged and returned so the caller can log them.
    @discardableResult
    func apply(_ properties: [String: DBusValue], to model: inout Model) -> [DBusError] {
        var problems: [DBusError] = []
        for (name, value) in properties {
            guard let property = byName[name] else { continue }
            do {
                try property.apply(&model, value)
            } catch {
                problems.append(error.prefixed(with: "\(interface).\(name)"))
            }
        }
        return problems
    }

    func invalidate(_ names: [String], in model: inout Model) {
        for name in names { byName[name]?.invalidate(&model) }
    }
}

extension DBusError {
    /// The mismatch error, located at a BlueZ property.
    func prefixed(with location: String) -> DBusError {
        if case .typeMismatch(let expected, let actual, let inner) = self {
            return .typeMismatch(expected: expected, actual: actual, location: inner.isEmpty ? location : location + " → " + inner)
        }
        return self
    }
}
