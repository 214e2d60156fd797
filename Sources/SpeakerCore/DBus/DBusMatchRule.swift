/// Which signals a subscription wants: the bus-side match rule and the same test applied
/// locally, so each subscription sees only its own signals even when rules overlap.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
    /// A unique name (`:1.42`) or a well-known name (`org.bluez`). The bus resolves well-known
    /// names; locally a well-known sender is trusted to the bus's filtering.
    public var sender: String?
    public var path: DBusObjectPath?
    /// Matches `path` itself and every path below it.
    public var pathNamespace: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// String arguments that must be equal, by 0-based index (`arg0='org.bluez'`).
    public var arguments: [Int: String]

    public init(
        sender: String? = nil, path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil,
        interface: String? = nil, member: String? = nil, arguments: [Int: String] = [:]
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    /// Checks names and argument indices before the rule reaches the bus.
    func validate() throws(DBusError) {
        if let sender { try DBusValidation.busName(sender) }
        if let interface { try DBusValidation.interface(interface) }
        if let member { try DBusValidation.member(member) }
        if path != nil, pathNamespace != nil {
            throw .invalidArgument("a match rule cannot have both path and pathNamespace")
        }
        for (index, value) in arguments {
            guard (0...63).contains(index) else { throw .invalidArgument("match rule argument index \(index) is outside 0...63") }
            try DBusValidation.string(value)
        }
    }

    /// The rule in the bus's syntax, e.g. `type='signal',interface='org.bluez.Device1'`.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            parts.append("\(key)='" + value.map { $0 == "'" ? "'\\''" : String($0) }.joined() + "'")
        }
        add("sender", sender)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("interface", interface)
        add("member", member)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
        return parts.joined(separator: ",")
    }

    /// Whether `signal` satisfies every field this rule sets.
    func matches(sender signalSender: String?, path signalPath: DBusObjectPath?, interface signalInterface: String?,
                 member signalMember: String?, arguments lazyArguments: () -> [DBusValue]) -> Bool {
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", sender != signalSender { return false }
        if let path, path != signalPath { return false }
        if let pathNamespace {
            guard let signalPath, signalPath.isDescendant(ofOrEqualTo: pathNamespace) else { return false }
        }
        if let interface, interface != signalInterface { return false }
        if let member, member != signalMember { return false }
        if !arguments.isEmpty {
            let values = lazyArguments()
            for (index, expected) in arguments {
                guard index < values.count else { return false }
                switch values[index] {
                case .string(let actual) where actual == expected: continue
                case .objectPath(let actual) where actual.rawValue == expected: continue
                default: return false
                }
            }
        }
        return true
    }
}

/// One received signal.
public struct DBusSignal: Sendable, Hashable {
    /// The sender's unique name (`:1.42`).
    public var sender: String
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(sender: String, path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}
