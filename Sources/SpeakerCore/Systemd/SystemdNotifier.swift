import Glibc

/// Tells systemd how the service is doing, over the `NOTIFY_SOCKET` datagram socket.
///
/// Our own few lines instead of libsystemd, so the daemon has no extra library and the
/// protocol stays visible: a datagram of `KEY=VALUE` lines sent to a unix socket whose path
/// comes from the environment (a leading '@' means the abstract namespace). Outside systemd
/// there is no `NOTIFY_SOCKET` and `init(environment:)` returns nil: callers skip notifying.
public final class SystemdNotifier: Sendable {
    /// Where datagrams go: a filesystem path or an abstract name (without the '@').
    public enum Destination: Equatable, Sendable {
        case path(String)
        case abstract(String)
    }

    public let destination: Destination
    private let socketFD: Int32

    /// Reads `NOTIFY_SOCKET`; nil when it is unset or empty (not run by systemd).
    public convenience init?(environment: [String: String]) throws(SystemdNotifyError) {
        guard let value = environment["NOTIFY_SOCKET"], !value.isEmpty else { return nil }
        let destination: Destination = value.hasPrefix("@") ? .abstract(String(value.dropFirst())) : .path(value)
        try self.init(destination: destination)
    }

    public init(destination: Destination) throws(SystemdNotifyError) {
        let name: String
        switch destination {
        case .path(let path):
            guard path.hasPrefix("/") else { throw .invalidSocket(path) }
            name = path
        case .abstract(let abstractName): name = abstractName
        }
        guard name.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 else {
            throw .invalidSocket(name)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .sendFailed(errno: errno) }
        self.destination = destination
        self.socketFD = fd
    }

    deinit { close(socketFD) }

    /// Sends the messages in one datagram, so `READY=1` and its `STATUS=` arrive together.
    ///
    /// Never blocks: a datagram socket whose reader stopped reading (its queue holds only
    /// `net.unix.max_dgram_qlen` datagrams) would otherwise park the calling thread in `sendto`
    /// for ever, and with it a thread of the cooperative pool that shutdown needs. A full queue
    /// is an error the caller logs; systemd reads its socket promptly, so it means no one listens.
    public func send(_ messages: [NotifyMessage]) throws(SystemdNotifyError) {
        let payload = Array(messages.map(\.assignment).joined(separator: "\n").utf8)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let (nameBytes, offset): ([UInt8], Int) = switch destination {
        case .path(let path): (Array(path.utf8), 0)
        case .abstract(let name): (Array(name.utf8), 1)  // sun_path[0] = 0 marks the abstract namespace
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in nameBytes.enumerated() { raw[offset + index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + nameBytes.count)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                payload.withUnsafeBytes { bytes in
                    sendto(socketFD, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
                }
            }
        }
        guard sent == payload.count else { throw .sendFailed(errno: errno) }
    }

    public func send(_ message: NotifyMessage) throws(SystemdNotifyError) { try send([message]) }
}

/// A notification that could not be delivered.
public enum SystemdNotifyError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidSocket(String)
    case sendFailed(errno: Int32)

    public var description: String {
        switch self {
        case .invalidSocket(let name):
            "NOTIFY_SOCKET '\(name)' is neither an absolute path nor an '@' abstract name of usable length"
        case .sendFailed(let code) where code == EAGAIN || code == EWOULDBLOCK:
            "cannot notify systemd: its notification socket is full (nothing is reading it)"
        case .sendFailed(let code):
            "cannot notify systemd: \(String(cString: strerror(code)))"
        }
    }
}
