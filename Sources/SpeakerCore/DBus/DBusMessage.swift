internal import CDBus

/// Owns one libdbus `DBusMessage*` and unrefs it when released.
///
/// Messages are immutable once sent or received, so a message may be handed from the I/O
/// thread to the task that decodes it; only one thread touches it at a time.
final class DBusMessage: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    deinit { dbus_message_unref(pointer) }

    static func methodCall(
        destination: String?, path: DBusObjectPath, interface: String?, method: String
    ) throws(DBusError) -> DBusMessage {
        if let destination { try DBusValidation.busName(destination) }
        if let interface { try DBusValidation.interface(interface) }
        try DBusValidation.member(method)
        guard let raw = dbus_message_new_method_call(destination, path.rawValue, interface, method) else {
            throw .invalidArgument("out of memory while building a D-Bus message")
        }
        return DBusMessage(taking: raw)
    }

    static func signal(path: DBusObjectPath, interface: String, member: String) throws(DBusError) -> DBusMessage {
        try DBusValidation.interface(interface)
        try DBusValidation.member(member)
        guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw .invalidArgument("out of memory while building a D-Bus message")
        }
        return DBusMessage(taking: raw)
    }

    func makeReturn() -> DBusMessage? {
        dbus_message_new_method_return(pointer).map { DBusMessage(taking: $0) }
    }

    /// The longest error text a reply carries: a sentence and a short quote, never a copy of
    /// whatever huge argument the caller sent.
    static let maxErrorMessageBytes = 1024

    func makeError(name: String, message: String) -> DBusMessage? {
        let safeName = (try? DBusValidation.errorName(name)) != nil ? name : DBusError.Name.failed
        let short = message.truncatedUTF8(to: Self.maxErrorMessageBytes)
        let safeMessage = short.utf8.contains(0) || dbus_validate_utf8(short, nil) == 0 ? "(unprintable message)" : short
        return dbus_message_new_error(pointer, safeName, safeMessage).map { DBusMessage(taking: $0) }
    }

    /// Validates, then appends the values as the message body.
    func append(_ values: [DBusValue]) throws(DBusError) {
        guard !values.isEmpty else { return }
        try DBusValidation.body(values)
        try DBusMarshalling.append(values, to: pointer)
    }

    var arguments: [DBusValue] { DBusMarshalling.read(pointer) }

    var kind: Int32 { dbus_message_get_type(pointer) }
    var sender: String? { dbus_message_get_sender(pointer).map { String(cString: $0) } }
    var destination: String? { dbus_message_get_destination(pointer).map { String(cString: $0) } }
    var path: DBusObjectPath? { dbus_message_get_path(pointer).map { DBusObjectPath(unchecked: String(cString: $0)) } }
    var interface: String? { dbus_message_get_interface(pointer).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(pointer).map { String(cString: $0) } }
    var errorName: String? { dbus_message_get_error_name(pointer).map { String(cString: $0) } }
    var signature: String { dbus_message_get_signature(pointer).map { String(cString: $0) } ?? "" }
    var serial: UInt32 { dbus_message_get_serial(pointer) }
    var expectsReply: Bool { dbus_message_get_no_reply(pointer) == 0 }
    var containsUnixFDs: Bool { signature.contains("h" as Character) }

    /// For an error reply: its name and its first string argument, as `DBusError.remote`.
    var remoteError: DBusError {
        let name = errorName ?? DBusError.Name.failed
        var text = ""
        if case .string(let first)? = arguments.first { text = first }
        return .remote(name: name, message: text)
    }

    func setNoReply() { dbus_message_set_no_reply(pointer, 1) }

    func setDestination(_ destination: String) throws(DBusError) {
        try DBusValidation.busName(destination)
        guard dbus_message_set_destination(pointer, destination) != 0 else {
            throw .invalidArgument("out of memory while building a D-Bus message")
        }
    }
}


extension String {
    /// At most `limit` bytes of UTF-8, cut at a character boundary and marked with "…".
    public func truncatedUTF8(to limit: Int) -> String {
        guard utf8.count > limit else { return self }
        var result = ""
        var used = 0
        for character in self {
            let size = character.utf8.count
            guard used + size <= limit - 3 else { break }
            result.append(character)
            used += size
        }
        return result + "…"
    }
}
