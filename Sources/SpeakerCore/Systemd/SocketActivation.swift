import CBlueZ  // the socket constants, as in SystemdNotifier
import Glibc

/// The two sd-daemon functions that Debian's static libdbus refers to, defined here because
/// speakerd links libdbus-1.a instead of the shared libdbus (Package.swift, `staticCBlueZLibraries`).
///
/// libdbus calls them only for a bus *server* listening on a `systemd:` address, which takes
/// its sockets from systemd's socket activation; speakerd is a client and never does. But their
/// owner, libsystemd, comes only as a shared library that loads five more (libgcrypt, libzstd,
/// liblzma, liblz4, libcap), so they are written here from sd_listen_fds(3) and sd_is_socket(3)
/// and tested like the rest, rather than left as stubs that would answer wrongly.
enum SocketActivation {
    /// `SD_LISTEN_FDS_START`: systemd passes sockets as descriptors 3, 4, ….
    static let firstDescriptor: Int32 = 3

    /// How many descriptors systemd passed to the process `processID`, from the values of
    /// `LISTEN_PID` and `LISTEN_FDS`: 0 when they are unset or meant for another process
    /// (a child that inherited the environment), -EINVAL when either is malformed.
    static func passedDescriptorCount(listenPID: String?, listenFDs: String?, processID: pid_t) -> Int32 {
        guard let listenPID else { return 0 }
        guard let pid = pid_t(listenPID), pid > 0 else { return -EINVAL }
        guard pid == processID, let listenFDs else { return 0 }
        guard let count = Int32(listenFDs), count >= 0, count <= Int32.max - firstDescriptor else { return -EINVAL }
        return count
    }

    /// Marks `count` descriptors from `first` close-on-exec, as sd_listen_fds(3) promises:
    /// passed sockets must not leak into the programs speakerd starts. 0, or -errno.
    static func markCloseOnExec(from first: Int32, count: Int32) -> Int32 {
        for fd in first ..< first + count {
            let flags = fcntl(fd, F_GETFD)
            guard flags >= 0 else { return -errno }
            if flags & FD_CLOEXEC == 0, fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0 { return -errno }
        }
        return 0
    }

    /// sd_is_socket(3): 1 when `fd` is a socket of `family` (AF_UNSPEC: any), `type` (0: any),
    /// and listening or not as `listening` says (negative: either); 0 when it is not; -errno on error.
    static func isSocket(_ fd: Int32, family: Int32, type: Int32, listening: Int32) -> Int32 {
        guard fd >= 0 else { return -EBADF }
        guard family >= 0 else { return -EINVAL }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return -errno }
        guard status.st_mode & S_IFMT == S_IFSOCK else { return 0 }
        if type != 0 {
            guard let actual = integerOption(fd, SO_TYPE) else { return -errno }
            guard actual == type else { return 0 }
        }
        if listening >= 0 {
            guard let accepting = integerOption(fd, SO_ACCEPTCONN) else { return -errno }
            guard (accepting != 0) == (listening != 0) else { return 0 }
        }
        if family != AF_UNSPEC {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { return -errno }
            guard Int32(address.ss_family) == family else { return 0 }
        }
        return 1
    }

    private static func integerOption(_ fd: Int32, _ option: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
    }
}

/// sd_listen_fds(3), for libdbus-1.a: the number of sockets systemd passed, marked close-on-exec.
/// With `unsetEnvironment` non-zero, `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` are removed
/// whatever the outcome, so they do not reach child processes.
@_cdecl("sd_listen_fds")
public func systemdListenFDs(_ unsetEnvironment: Int32) -> Int32 {
    defer {
        if unsetEnvironment != 0 {
            for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        }
    }
    let count = SocketActivation.passedDescriptorCount(
        listenPID: getenv("LISTEN_PID").map { String(cString: $0) },
        listenFDs: getenv("LISTEN_FDS").map { String(cString: $0) },
        processID: getpid())
    guard count > 0 else { return count }
    let marked = SocketActivation.markCloseOnExec(from: SocketActivation.firstDescriptor, count: count)
    return marked < 0 ? marked : count
}

/// sd_is_socket(3), for libdbus-1.a (see `SocketActivation.isSocket`).
@_cdecl("sd_is_socket")
public func systemdIsSocket(_ fd: Int32, _ family: Int32, _ type: Int32, _ listening: Int32) -> Int32 {
    SocketActivation.isSocket(fd, family: family, type: type, listening: listening)
}
