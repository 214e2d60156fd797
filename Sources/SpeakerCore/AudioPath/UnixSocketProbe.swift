import Glibc

/// Whether something listens on a unix socket: connected to and closed at once. The daemon asks
/// it where a sound server may be (`SoundServerLocation`), the doctor where the bus is.
public enum UnixSocketProbe {
    /// Connects to the socket at path `name` (in the abstract namespace with `abstract`) and
    /// closes it; nil when that worked, or why not (the system's sentence: "No such file or
    /// directory", "Connection refused").
    public static func connect(name: String, abstract: Bool) -> String? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8), offset = abstract ? 1 : 0
        guard bytes.count + offset < MemoryLayout.size(ofValue: address.sun_path) else { return "socket name too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[offset + index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + bytes.count)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        return result == 0 ? nil : String(cString: strerror(errno))
    }
}
