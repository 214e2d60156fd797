import Foundation

/// A datagram socket bound by a test where `NOTIFY_SOCKET` points, standing in for systemd.
final class NotifySocketListener {
    let fd: Int32
    /// The value to put in `NOTIFY_SOCKET`.
    let notifySocket: String
    /// Datagrams received so far by `receivedCount(adding:)`.
    var pending: [String] = []

    init(path: String) {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        notifySocket = path
        bind(name: Array(path.utf8), offset: 0)
    }

    init(abstractName: String) {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        notifySocket = "@" + abstractName
        bind(name: Array(abstractName.utf8), offset: 1)
    }

    private func bind(name: [UInt8], offset: Int) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in name.enumerated() { raw[offset + index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + name.count)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        precondition(result == 0, "bind failed: \(String(cString: strerror(errno)))")
    }

    deinit { close(fd) }

    /// The datagrams already delivered, oldest first; never blocks.
    func receiveAll() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }
}
