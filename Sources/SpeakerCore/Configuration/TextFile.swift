#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Playback

/// Small POSIX file helpers for config and state: read a whole file, write one atomically.
///
/// Written against the C library rather than Foundation so that errors carry `errno`'s own
/// words and so the atomic write can fsync the file *and* its directory, which Foundation's
/// `.atomic` option does not do.
public enum TextFile {
    /// Reads a file as UTF-8 (a configuration file); nil when it does not exist. A symbolic
    /// link is followed (configuration is often linked into place), but what it reaches must be
    /// a regular file: the open never waits for a FIFO's writer (`O_NONBLOCK`), so a FIFO in
    /// the file's place is refused with its kind instead of stopping start-up before speakerd
    /// is on the bus (under Type=notify, a restart loop).
    public static func read(_ path: String) throws(FileReadError) -> String? {
        try read(path, regularOnly: true, followLinks: true)
    }

    /// `read`, refusing with its kind anything but a regular file reached without a symbolic
    /// link: the open neither follows a link (`O_NOFOLLOW`) nor waits for a FIFO's writer
    /// (`O_NONBLOCK`), so a FIFO put in the file's place cannot stop the reader.
    public static func readRegularFile(_ path: String) throws(FileReadError) -> String? {
        try read(path, regularOnly: true, followLinks: false)
    }

    private static func read(_ path: String, regularOnly: Bool, followLinks: Bool) throws(FileReadError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (regularOnly ? O_NONBLOCK : 0) | (followLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if !followLinks, errno == ELOOP {
                throw FileReadError(path: path, reason: "it is \(SongFileKind.symbolicLink), not a regular file")
            }
            throw FileReadError(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        if regularOnly, let kind = SongFileKind(descriptor: fd), kind != .regularFile {
            throw FileReadError(path: path, reason: "it is \(kind), not a regular file")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > maximumSize {
                throw FileReadError(path: path, reason: "larger than \(maximumSize / 1024) KiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FileReadError(path: path, reason: "not valid UTF-8 text")
        }
        return text
    }

    /// Config and state files are tiny; anything bigger is a mistake, not something to load.
    public static let maximumSize = 4 * 1024 * 1024

    /// Replaces `path` with `bytes` so that a crash leaves either the old or the new content.
    ///
    /// Temp file in the same directory (same filesystem, so rename is atomic), fsync it,
    /// rename over the target, fsync the directory so the rename itself is durable.
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(FileWriteError) {
        let directory = parentDirectory(of: path)
        let temp = "\(directory)/.\(baseName(of: path)).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw FileWriteError(path: path, step: "create \(temp)", errno: errno) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let saved = errno
                close(fd); unlink(temp)
                throw FileWriteError(path: path, step: "write", errno: saved)
            }
            written += count
        }
        if fsync(fd) != 0 {
            let saved = errno
            close(fd); unlink(temp)
            throw FileWriteError(path: path, step: "fsync", errno: saved)
        }
        close(fd)
        if rename(temp, path) != 0 {
            let saved = errno
            unlink(temp)
            throw FileWriteError(path: path, step: "rename", errno: saved)
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// The temp-file prefix `writeAtomically` uses for `path`; leftovers of a crash match it.
    public static func tempPrefix(for path: String) -> String { ".\(baseName(of: path)).tmp-" }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// A file that exists but cannot be read.
public struct FileReadError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { reason }
}

/// An atomic write that failed at one step; the old file is untouched.
public struct FileWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let step: String
    public let errno: Int32

    public init(path: String, step: String, errno: Int32) {
        self.path = path
        self.step = step
        self.errno = errno
    }

    public var description: String {
        "cannot save \(path): \(step) failed: \(String(cString: strerror(errno)))"
    }
}
