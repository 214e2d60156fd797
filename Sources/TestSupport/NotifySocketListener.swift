import Foundation

/// A datagram socket bound by a test where `NOTIFY_SOCKET` points, standing in for systemd.
/// Unchecked: each test uses its listener from one task at a time.
public final class NotifySocketListener: @unchecked Sendable {
    public let fd: Int32
    /// The value to put in `NOTIFY_SOCKET`.
    public let notifySocket: String
    /// Datagrams received so far by `receivedCount(adding:)`.
    public var pending: [String] = []

    public init(path: String) {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        notifySocket = path
        bind(to: path, abstract: false)
    }

    public init(abstractName: String) {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        notifySocket = "@" + abstractName
        bind(to: abstractName, abstract: true)
    }

    private func bind(to name: String, abstract: Bool) {
        precondition(bindUnixSocket(fd, to: name, abstract: abstract) == 0, "bind failed: \(String(cString: strerror(errno)))")
    }

    deinit { close(fd) }

    /// The datagrams already delivered, oldest first; never blocks.
    public func receiveAll() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }
}

extension NotifySocketListener {
    /// Drains the socket into `pending` and returns how many have arrived so far.
    public func receivedCount(adding _: Int) -> Int {
        pending.append(contentsOf: receiveAll())
        return pending.count
    }
}
