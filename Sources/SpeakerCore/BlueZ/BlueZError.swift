import DBus
/// An error reply from bluetoothd (`org.bluez.Error.*`), typed, with the D-Bus message kept.
///
/// Following bluer, the kind is the error name without its `org.bluez.Error.` prefix, so code can
/// switch on it; the message is kept because BlueZ puts the real reason there (`Failed` with
/// `br-connection-page-timeout` means "speaker off", `Failed` with `br-connection-profile-unavailable`
/// means "no audio stack"). `connectionFailure` decodes that reason when present.
public struct BlueZError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Every error name bluetoothd documents or sends (src/error.c, src/device.c, doc/*.rst).
    public enum Kind: Equatable, Hashable, Sendable {
        case failed
        case inProgress
        case notReady
        case notSupported
        case notAuthorized
        case notAvailable
        case notPermitted
        case alreadyExists
        case doesNotExist
        case invalidArguments
        case alreadyConnected
        case notConnected
        case noSuchAdapter
        case agentNotAvailable
        case authenticationFailed
        case authenticationCanceled
        case authenticationRejected
        case authenticationTimeout
        case connectionAttemptFailed
        /// `org.bluez.Error.BREDR.ProfileUnavailable`: no local endpoint for any of the device's profiles.
        case profileUnavailable
        /// What agents answer with (`org.bluez.Error.Rejected` / `.Canceled`).
        case rejected
        case canceled
        /// `org.bluez.Error.Busy`: the adapter is in the middle of something of its own (bluetoothd
        /// powering a controller that just came back answers a power-on so).
        case busy
        /// An `org.bluez.Error.*` name this version does not know; the full name is kept.
        case other(String)

        static let table: [(String, Kind)] = [
            ("Failed", .failed), ("InProgress", .inProgress), ("NotReady", .notReady),
            ("NotSupported", .notSupported), ("NotAuthorized", .notAuthorized),
            ("NotAvailable", .notAvailable), ("NotPermitted", .notPermitted),
            ("AlreadyExists", .alreadyExists), ("DoesNotExist", .doesNotExist),
            ("InvalidArguments", .invalidArguments), ("AlreadyConnected", .alreadyConnected),
            ("NotConnected", .notConnected), ("NoSuchAdapter", .noSuchAdapter),
            ("AgentNotAvailable", .agentNotAvailable),
            ("AuthenticationFailed", .authenticationFailed),
            ("AuthenticationCanceled", .authenticationCanceled),
            ("AuthenticationRejected", .authenticationRejected),
            ("AuthenticationTimeout", .authenticationTimeout),
            ("ConnectionAttemptFailed", .connectionAttemptFailed),
            ("BREDR.ProfileUnavailable", .profileUnavailable),
            ("Rejected", .rejected), ("Canceled", .canceled), ("Busy", .busy),
        ]

        /// The suffix after `org.bluez.Error.`.
        public var shortName: String {
            if case .other(let name) = self { return name }
            return Self.table.first { $0.1 == self }!.0
        }
    }

    public static let errorPrefix = "org.bluez.Error."

    public let kind: Kind
    /// The D-Bus error message, verbatim.
    public let message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// Types a D-Bus error reply; `nil` when the name is not one of BlueZ's.
    public init?(dbusName name: String, message: String) {
        guard name.hasPrefix(Self.errorPrefix) else { return nil }
        let suffix = String(name.dropFirst(Self.errorPrefix.count))
        self.kind = Kind.table.first { $0.0 == suffix }?.1 ?? .other(suffix)
        self.message = message
    }

    /// The full D-Bus error name.
    public var dbusName: String { Self.errorPrefix + kind.shortName }

    /// Why a `Pair` that failed so left the speaker unpaired for good, in a few words: it is not
    /// in pairing mode, or it refused the keys, and trying again will not change that until a
    /// person acts. Nil for other failures (a speaker out of reach, a busy adapter), which a
    /// retry may get past.
    public var pairingRefusal: String? {
        switch kind {
        case .authenticationFailed: "it rejected the keys"
        case .authenticationRejected, .rejected: "it rejected the pairing"
        case .authenticationCanceled, .canceled: "the pairing was cancelled"
        case .authenticationTimeout: "it did not answer the pairing in time"
        default: nil
        }
    }

    /// The br-/le- connection reason BlueZ put in the message, if any.
    public var connectionFailure: ConnectionFailure? { ConnectionFailure(message: message) }

    /// A sentence for a person: what it means and what to do.
    public var explanation: String {
        if let reason = connectionFailure { return reason.explanation }
        switch kind {
        case .failed: return "BlueZ reported a failure"
        case .inProgress: return "another operation on this device is already under way; wait for it to finish"
        case .notReady: return "the Bluetooth adapter is not ready (powered off or still starting)"
        case .notSupported: return "the adapter or device does not support this operation"
        case .notAuthorized: return "BlueZ refused: this user is not allowed to do that (check the D-Bus policy)"
        case .notAvailable: return "the operation is not available right now"
        case .notPermitted: return "the operation is not permitted in the current state"
        case .alreadyExists: return "it already exists (the device is already paired, or an agent is already registered)"
        case .doesNotExist: return "the device or object no longer exists in BlueZ; scan again"
        case .invalidArguments: return "BlueZ rejected the arguments (a bug in speakerd: please report it)"
        case .alreadyConnected: return "the device is already connected"
        case .notConnected: return "the device is not connected"
        case .noSuchAdapter: return "the Bluetooth adapter is gone (unplugged or removed)"
        case .agentNotAvailable: return "no pairing agent is registered with BlueZ"
        case .authenticationFailed: return "pairing failed: the speaker rejected the keys; put it in pairing mode and try again"
        case .authenticationCanceled: return "pairing was cancelled"
        case .authenticationRejected: return "pairing was rejected by the speaker or the agent"
        case .authenticationTimeout: return "pairing timed out: put the speaker in pairing mode and try again"
        case .connectionAttemptFailed: return "the connection attempt failed: the speaker is off, out of range or busy"
        case .profileUnavailable: return "no audio endpoint registered: is BlueALSA or PipeWire running?"
        case .rejected: return "the request was rejected"
        case .canceled: return "the request was cancelled"
        case .busy: return "the Bluetooth adapter is busy (still starting up or resetting); try again in a moment"
        case .other: return "BlueZ reported an error this version of speakerd does not know"
        }
    }

    public var description: String {
        let detail = message.isEmpty ? "" : " (\(dbusName): \(DBusError.gist(of: message)))"
        if message.isEmpty { return "\(explanation) (\(dbusName))" }
        return explanation + detail
    }
}
