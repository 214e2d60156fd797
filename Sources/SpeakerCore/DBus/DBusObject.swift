import Synchronization

/// An argument of a method or signal, for introspection.
public struct DBusArgument: Sendable, Hashable {
    public var name: String
    public var signature: DBusSignature
    public init(_ name: String, _ signature: DBusSignature) {
        self.name = name
        self.signature = signature
    }
}

/// What a method handler receives.
public struct DBusMethodCallContext: Sendable {
    /// The caller's unique name.
    public var sender: String
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    /// The call's values, already checked against the method's declared input signature.
    public var arguments: [DBusValue]
    /// The one reply this call gets, whoever sends it first: `answerNow` or the handler's return.
    let answer: DBusCallAnswer

    /// Argument `index` (0-based) as a `T`, with a precise error naming it.
    public func argument<T: DBusDecodable>(_ index: Int, as type: T.Type) throws(DBusError) -> T {
        try arguments.decode(T.self, at: index)
    }

    /// Replies to the caller now, while the handler goes on working: a call that may wait longer
    /// than a client library's reply timeout (25 s in dbus-python, GDBus and sd-bus) answers
    /// "accepted" in time, and the handler still holds its admission slot and is still cancelled
    /// if the caller leaves the bus. What the handler returns or throws afterwards is not sent
    /// (it must report its outcome another way, such as a signal).
    /// - Returns: false if the call was already answered (nothing is sent).
    /// - Throws: `.typeMismatch` when `values` do not match the method's declared outputs.
    @discardableResult
    public func answerNow(_ values: [DBusValue]) throws(DBusError) -> Bool {
        let actual = values.signature.rawValue
        guard actual == answer.expectedSignature else {
            throw .typeMismatch(expected: answer.expectedSignature, actual: actual, location: "\(interface).\(member) early reply")
        }
        guard answer.claim() else { return false }
        answer.send(values)
        return true
    }
}

/// The single reply of one incoming call: claimed once, by an early answer or by the handler's end.
final class DBusCallAnswer: Sendable {
    let expectedSignature: String
    private let claimed = Atomic<Bool>(false)
    private let sendValues: @Sendable ([DBusValue]) -> Void

    init(expectedSignature: String, send: @escaping @Sendable ([DBusValue]) -> Void) {
        self.expectedSignature = expectedSignature
        self.sendValues = send
    }

    /// True exactly once.
    func claim() -> Bool { !claimed.exchange(true, ordering: .acquiringAndReleasing) }
    func send(_ values: [DBusValue]) { sendValues(values) }
}

/// A method an exported object answers. Errors the handler throws become D-Bus error replies:
/// `DBusError.remote(name:message:)` and `DBusErrorConvertible` keep their name, anything else
/// is `org.freedesktop.DBus.Error.Failed` with the error's description.
public struct DBusMethod: Sendable {
    public var name: String
    public var inputs: [DBusArgument]
    public var outputs: [DBusArgument]
    public var handler: @Sendable (DBusMethodCallContext) async throws -> [DBusValue]
    /// Counts against the object's `DBusCallLimits` (a call that may wait long or holds
    /// descriptors); quick answers from memory, such as a status, are never refused.
    public var bounded: Bool

    public init(
        _ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [], bounded: Bool = false,
        handler: @escaping @Sendable (DBusMethodCallContext) async throws -> [DBusValue]
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.bounded = bounded
        self.handler = handler
    }

    var inputSignature: String { inputs.map(\.signature.rawValue).joined() }
    var outputSignature: String { outputs.map(\.signature.rawValue).joined() }
}

/// A property with its current value; its signature is the initial value's and never changes.
public struct DBusProperty: Sendable {
    public enum Access: String, Sendable { case read, write, readwrite }

    public var name: String
    public var initialValue: DBusValue
    public var access: Access
    /// Whether changes are announced with PropertiesChanged (true for nearly everything).
    public var emitsChangedSignal: Bool
    /// Runs before a remote `Set` is accepted; throw to refuse the new value.
    public var validateSet: (@Sendable (DBusValue) throws -> Void)?

    public init(
        _ name: String, value: DBusValue, access: Access = .read, emitsChangedSignal: Bool = true,
        validateSet: (@Sendable (DBusValue) throws -> Void)? = nil
    ) {
        self.name = name
        self.initialValue = value
        self.access = access
        self.emitsChangedSignal = emitsChangedSignal
        self.validateSet = validateSet
    }

    public var signature: DBusSignature { initialValue.signature }
}

/// A signal an object may emit, for introspection.
public struct DBusSignalDeclaration: Sendable {
    public var name: String
    public var arguments: [DBusArgument]
    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// One interface of an exported object, declared once: introspection, argument checking and
/// property access all come from this declaration.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDeclaration]

    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignalDeclaration] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

/// An object that can be exported on one or more connections. It holds its property values;
/// `setProperty` updates one and announces it on every connection the object is exported on.
public final class DBusObject: Sendable {
    public let interfaces: [DBusInterface]
    /// Bounds on pending calls to the `bounded` methods; nil for none.
    public let callLimits: DBusCallLimits?
    private let values: Mutex<[String: [String: DBusValue]]>
    private let exportedAt = Mutex<[DBusObjectExport]>([])
    private let callsReceived = Atomic<Int>(0)

    public init(interfaces: [DBusInterface], callLimits: DBusCallLimits? = nil) throws(DBusError) {
        var initial: [String: [String: DBusValue]] = [:]
        for interface in interfaces {
            try DBusValidation.interface(interface.name)
            for method in interface.methods { try DBusValidation.member(method.name) }
            for property in interface.properties {
                try DBusValidation.member(property.name)
                try DBusValidation.body([property.initialValue])
                initial[interface.name, default: [:]][property.name] = property.initialValue
            }
        }
        self.interfaces = interfaces
        self.callLimits = callLimits
        self.values = Mutex(initial)
    }

    func interface(named name: String) -> DBusInterface? { interfaces.first { $0.name == name } }

    /// How many calls to the object's own methods have arrived, counted on the connection's I/O
    /// thread as each is read, before its handler runs. A service started for a request (bus
    /// activation) finds the calls queued for its name here once it owns the name and has made
    /// one more round trip to the bus.
    public var methodCallsReceived: Int { callsReceived.load(ordering: .acquiring) }

    func noteMethodCall() { callsReceived.add(1, ordering: .releasing) }

    /// The current value of a property, or nil if it is not declared.
    public func property(_ name: String, of interface: String) -> DBusValue? {
        values.withLock { $0[interface]?[name] }
    }

    /// Readable properties of one interface, for GetAll and ObjectManager.
    func readableProperties(of interface: DBusInterface) -> [String: DBusValue] {
        let current = values.withLock { $0[interface.name] ?? [:] }
        var result: [String: DBusValue] = [:]
        for property in interface.properties where property.access != .write { result[property.name] = current[property.name] }
        return result
    }

    /// Changes a property and emits PropertiesChanged where the object is exported.
    /// - Throws: `.invalidArgument` for an undeclared property, `.typeMismatch` for a value of another type.
    public func setProperty(_ name: String, of interface: String, to value: DBusValue) throws(DBusError) {
        guard let declaration = self.interface(named: interface)?.properties.first(where: { $0.name == name }) else {
            throw .invalidArgument("\(interface) has no property \(name)")
        }
        guard value.signature == declaration.signature else {
            throw .typeMismatch(expected: declaration.signature.rawValue, actual: value.signatureString, location: "property \(interface).\(name)")
        }
        try DBusValidation.body([value])
        let changed = values.withLock { values -> Bool in
            guard values[interface]?[name] != value else { return false }
            values[interface, default: [:]][name] = value
            return true
        }
        guard changed, declaration.emitsChangedSignal else { return }
        for export in exportedAt.withLock({ $0 }) {
            export.connection?.emitPropertiesChanged(path: export.path, interface: interface, changed: [name: value])
        }
    }

    /// Emits one of the object's signals wherever it is exported.
    public func emitSignal(interface: String, member: String, arguments: [DBusValue]) {
        for export in exportedAt.withLock({ $0 }) {
            try? export.connection?.emitSignal(path: export.path, interface: interface, member: member, arguments: arguments)
        }
    }

    func added(to connection: DBusConnection, at path: DBusObjectPath) {
        exportedAt.withLock {
            $0.removeAll { $0.connection == nil }
            $0.append(DBusObjectExport(connection: connection, path: path))
        }
    }

    func removed(from connection: DBusConnection, at path: DBusObjectPath) {
        exportedAt.withLock { $0.removeAll { $0.connection == nil || ($0.connection === connection && $0.path == path) } }
    }
}

/// Where an object is exported; weak so an object never keeps a connection open.
struct DBusObjectExport: @unchecked Sendable {
    weak var connection: DBusConnection?
    let path: DBusObjectPath
}
