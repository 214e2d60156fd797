import DBus
import Synchronization

/// speakerd's pairing agent (`org.bluez.Agent1`, capability NoInputNoOutput).
///
/// Why our own agent: a headless box has nobody to type a PIN, and without a registered agent
/// BlueZ refuses or stalls pairing. Speakers pair with Just Works, so the agent says yes, but only
/// for the device speakerd itself is pairing right now: a stranger nearby asking to pair with the
/// box is refused. Legacy (pre-2.1) speakers ask for a PIN; they all use "0000".
final class BlueZAgent: Sendable {
    static let capability = "NoInputNoOutput"
    static let legacyPIN = "0000"
    static let rejected = "org.bluez.Error.Rejected"

    let path: DBusObjectPath
    private let targets = Mutex<Set<BluetoothAddress>>([])
    private let requests = Mutex<[String]>([])

    init(path: DBusObjectPath) {
        self.path = path
    }

    /// Lets the agent accept pairing requests for `address` until `end(address)`.
    func begin(_ address: BluetoothAddress) { _ = targets.withLock { $0.insert(address) } }
    func end(_ address: BluetoothAddress) { _ = targets.withLock { $0.remove(address) } }

    /// What BlueZ asked the agent so far (for tests and diagnostics), e.g. `RequestConfirmation 11:22:…`.
    var requestLog: [String] { requests.withLock { $0 } }

    private func authorise(_ method: String, _ context: DBusMethodCallContext) throws -> BluetoothAddress {
        let path = try context.argument(0, as: DBusObjectPath.self)
        let address = BlueZPaths.address(ofDevice: path)
        requests.withLock { $0.append("\(method) \(address.map { "\($0)" } ?? path.rawValue)") }
        guard let address, targets.withLock({ $0.contains(address) }) else {
            throw DBusError.remote(name: Self.rejected, message: "speakerd is not pairing with \(path.rawValue)")
        }
        return address
    }

    /// The exported object.
    func makeObject() throws -> DBusObject {
        let o = DBusArgument("device", "o")
        let interface = DBusInterface(BlueZInterface.agent, methods: [
            DBusMethod("Release") { _ in [] },
            DBusMethod("Cancel") { [weak self] _ in
                self?.requests.withLock { $0.append("Cancel") }
                return []
            },
            DBusMethod("RequestPinCode", inputs: [o], outputs: [DBusArgument("pincode", "s")]) { [self] context in
                _ = try authorise("RequestPinCode", context)
                return [.string(Self.legacyPIN)]
            },
            DBusMethod("DisplayPinCode", inputs: [o, DBusArgument("pincode", "s")]) { [self] context in
                _ = try authorise("DisplayPinCode", context)
                return []
            },
            DBusMethod("RequestPasskey", inputs: [o], outputs: [DBusArgument("passkey", "u")]) { [self] context in
                _ = try authorise("RequestPasskey", context)
                // A speaker never shows a passkey to type; asking for one means it is not a speaker.
                throw DBusError.remote(name: Self.rejected, message: "speakerd cannot enter a passkey")
            },
            DBusMethod("DisplayPasskey", inputs: [o, DBusArgument("passkey", "u"), DBusArgument("entered", "q")]) { _ in [] },
            DBusMethod("RequestConfirmation", inputs: [o, DBusArgument("passkey", "u")]) { [self] context in
                _ = try authorise("RequestConfirmation", context)
                return []
            },
            DBusMethod("RequestAuthorization", inputs: [o]) { [self] context in
                _ = try authorise("RequestAuthorization", context)
                return []
            },
            DBusMethod("AuthorizeService", inputs: [o, DBusArgument("uuid", "s")]) { [self] context in
                _ = try authorise("AuthorizeService", context)
                return []
            },
        ])
        return try DBusObject(interfaces: [interface])
    }
}
