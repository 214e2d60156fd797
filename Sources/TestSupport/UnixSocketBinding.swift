import Glibc

/// Binds the unix socket `fd` to `name`: a filesystem path, or with `abstract` a name in the
/// abstract namespace (`sun_path` starting with a NUL). Returns bind(2)'s result.
public func bindUnixSocket(_ fd: Int32, to name: String, abstract: Bool = false) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(name.utf8), offset = abstract ? 1 : 0
    precondition(offset + bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket name too long: \(name)")
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[offset + index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + bytes.count)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
}
