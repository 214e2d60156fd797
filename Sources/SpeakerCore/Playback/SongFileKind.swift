import Glibc
import SystemPackage

/// What kind of file a song's descriptor refers to, and whether a song can come out of it.
///
/// Only a regular file or a stream (a pipe, a socket) can ever deliver a whole song: a
/// directory cannot be read, `/dev/null` is empty for ever, `/dev/zero` and `/dev/urandom`
/// never end, an eventfd yields counters. Checking with `fstat` as the descriptor arrives turns
/// each of those into an error naming the kind at once, where reading would wait out the time
/// limit and then blame "a pipe whose writer never closed".
public enum SongFileKind: Equatable, Sendable, CustomStringConvertible {
    case regularFile
    /// An anonymous pipe (`cat song.mid | …`).
    case pipe
    /// A FIFO with a name in the file system: opening it waits for a writer.
    case namedPipe
    case socket
    case directory
    case characterDevice
    case blockDevice
    case symbolicLink
    /// An anonymous inode (eventfd, timerfd, epoll…), with the kernel's name for it.
    case special(String)

    /// The kind of the open file behind `descriptor`; nil when `fstat` fails.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regularFile
        case S_IFIFO: self = Self.link(of: descriptor).hasPrefix("/") ? .namedPipe : .pipe
        case S_IFSOCK: self = .socket
        case S_IFDIR: self = .directory
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFLNK: self = .symbolicLink
        default: self = .special(Self.anonymousName(Self.link(of: descriptor)))
        }
    }

    /// The kind of what `path` names, through links (a path's FIFO is a named pipe); nil when
    /// nothing is there.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regularFile
        case S_IFIFO: self = .namedPipe
        case S_IFSOCK: self = .socket
        case S_IFDIR: self = .directory
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .special("a special file")
        }
    }

    /// Opens `path` to read a song from, without waiting (a named pipe's plain open waits for a
    /// writer for ever), with what it is: what `play` sends and `render` reads.
    public static func openWithoutWaiting(_ path: String) throws -> (descriptor: FileDescriptor, kind: SongFileKind?) {
        let descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec, .nonBlocking])
        return (descriptor, SongFileKind(descriptor: descriptor.rawValue))
    }

    /// Whether reading can deliver a whole song (within the size and time limits).
    public var canHoldSong: Bool {
        switch self {
        case .regularFile, .pipe, .namedPipe, .socket: true
        case .directory, .characterDevice, .blockDevice, .symbolicLink, .special: false
        }
    }

    public var description: String {
        switch self {
        case .regularFile: "a regular file"
        case .pipe: "a pipe"
        case .namedPipe: "a named pipe (FIFO)"
        case .socket: "a socket"
        case .directory: "a directory"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .symbolicLink: "a symbolic link"
        case .special(let name): name
        }
    }

    /// "song.mid is a character device, not a MIDI file".
    public func refusal(of name: String) -> String { "\(name) is \(self), not a MIDI file" }

    /// Where /proc says the descriptor points: a path, "pipe:[…]", "anon_inode:[eventfd]".
    private static func link(of descriptor: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return "" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func anonymousName(_ link: String) -> String {
        switch link {
        case "anon_inode:[eventfd]": "an eventfd"
        case "anon_inode:[timerfd]": "a timerfd"
        case "anon_inode:[signalfd]": "a signalfd"
        case "anon_inode:[eventpoll]": "an epoll descriptor"
        case "anon_inode:inotify": "an inotify descriptor"
        default: link.isEmpty ? "a special file" : "a special file (\(link.prefix(40)))"
        }
    }
}
