import Glibc

/// A file descriptor travelling over D-Bus, owned by this object and closed when it goes away.
///
/// libdbus duplicates descriptors both when sending and when receiving, so each side owns its
/// own copy: wrapping them in a class makes that ownership explicit and leak-free.
public final class DBusUnixFD: Sendable, Hashable, CustomStringConvertible {
    /// The descriptor number; valid while this object is alive.
    public let rawValue: Int32

    /// Takes ownership of `fd`: it is closed when this object is released.
    public init(taking fd: Int32) { rawValue = fd }

    /// Duplicates `fd` (close-on-exec), leaving the caller's descriptor untouched.
    public init(duplicating fd: Int32) throws(DBusError) {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw .invalidArgument("cannot duplicate file descriptor \(fd): \(String(cString: strerror(errno)))")
        }
        rawValue = copy
    }

    /// A new descriptor for the same open file, owned by the caller (who must close it).
    public func duplicateRawDescriptor() throws(DBusError) -> Int32 {
        let copy = fcntl(rawValue, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw .invalidArgument("cannot duplicate file descriptor \(rawValue): \(String(cString: strerror(errno)))")
        }
        return copy
    }

    deinit { close(rawValue) }

    public static func == (lhs: DBusUnixFD, rhs: DBusUnixFD) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "fd \(rawValue)" }
}
