/// The connection failure reasons bluetoothd puts in the message of `org.bluez.Error.Failed`
/// (src/error.h: `br-connection-*` for BR/EDR, `le-connection-*` for LE).
///
/// Why typed: the reconnect policy needs to tell "speaker off" (retry later) from "no audio stack
/// on this machine" (retrying is useless; tell the user) from "busy" (retry soon).
public struct ConnectionFailure: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Transport: String, Sendable { case bredr = "br", le }

    public enum Reason: String, Sendable, CaseIterable {
        case alreadyConnected = "already-connected"
        case pageTimeout = "page-timeout"
        case profileUnavailable = "profile-unavailable"
        case sdpSearch = "sdp-search"
        case createSocket = "create-socket"
        case invalidArguments = "invalid-argument"
        case invalidArgumentsLE = "invalid-arguments"
        case adapterNotPowered = "adapter-not-powered"
        case notSupported = "not-supported"
        case badSocket = "bad-socket"
        case memoryAllocation = "memory-allocation"
        case busy = "busy"
        case concurrentConnectionLimit = "concurrent-connection-limit"
        case timeout = "timeout"
        case refused = "refused"
        case abortedByRemote = "aborted-by-remote"
        case abortedByLocal = "aborted-by-local"
        case abortByRemote = "abort-by-remote"
        case abortByLocal = "abort-by-local"
        case lmpProtocolError = "lmp-protocol-error"
        case linkLayerProtocolError = "link-layer-protocol-error"
        case gattBrowsing = "gatt-browsing"
        case canceled = "canceled"
        case keyMissing = "key-missing"
        case failed = "failed"
        case unknown = "unknown"
    }

    public let transport: Transport
    public let reason: Reason

    /// Finds `br-connection-…` or `le-connection-…` in a BlueZ error message.
    public init?(message: String) {
        let text = String(message.lowercased().drop { $0.isWhitespace }.prefix { !$0.isWhitespace })
        let transport: Transport
        if text.hasPrefix("br-connection-") {
            transport = .bredr
        } else if text.hasPrefix("le-connection-") {
            transport = .le
        } else {
            return nil
        }
        let rest = String(text.dropFirst("br-connection-".count))
        guard let reason = Reason(rawValue: rest) else { return nil }
        self.transport = transport
        self.reason = reason
    }

    public init(transport: Transport, reason: Reason) {
        self.transport = transport
        self.reason = reason
    }

    /// The string BlueZ sends (`br-connection-page-timeout`).
    public var description: String { "\(transport.rawValue)-connection-\(reason.rawValue)" }

    /// Whether trying again later can help (the speaker may come back), as opposed to a local problem.
    public var isWorthRetrying: Bool {
        switch reason {
        case .profileUnavailable, .notSupported, .invalidArguments, .invalidArgumentsLE,
             .adapterNotPowered, .keyMissing, .memoryAllocation:
            return false
        default:
            return true
        }
    }

    /// What it means for a person, and what to do.
    public var explanation: String {
        switch reason {
        case .pageTimeout: return "the speaker is off or out of range"
        case .profileUnavailable: return "no audio endpoint registered: is BlueALSA or PipeWire running?"
        case .refused: return "the speaker refused the connection (it may be paired with another device)"
        case .canceled: return "the connection attempt was cancelled"
        case .createSocket: return "could not open a connection to the speaker (it is off, out of range, or the audio profile was refused)"
        case .busy: return "the adapter is busy with another connection; try again in a moment"
        case .alreadyConnected: return "the speaker is already connected"
        case .sdpSearch: return "could not read the speaker's services (it went away during the connection)"
        case .adapterNotPowered: return "the Bluetooth adapter is powered off"
        case .notSupported: return "the speaker does not support any profile this machine offers"
        case .badSocket, .memoryAllocation: return "BlueZ failed internally while connecting"
        case .concurrentConnectionLimit: return "the adapter has too many connections open"
        case .timeout: return "the speaker did not answer in time"
        case .abortedByRemote, .abortByRemote: return "the speaker ended the connection while it was being set up"
        case .abortedByLocal, .abortByLocal: return "this machine ended the connection while it was being set up"
        case .lmpProtocolError, .linkLayerProtocolError: return "a Bluetooth protocol error occurred with the speaker; try again"
        case .gattBrowsing: return "could not read the device's LE services"
        case .keyMissing: return "the pairing keys are gone on one side: remove the speaker and pair it again"
        case .invalidArguments, .invalidArgumentsLE: return "BlueZ rejected the connection arguments"
        case .failed, .unknown: return "the connection failed for an unknown reason"
        }
    }
}
