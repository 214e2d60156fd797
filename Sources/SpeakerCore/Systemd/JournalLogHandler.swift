import Glibc
import Logging
import Synchronization

/// A swift-log handler that writes one line per message to stderr, with a `<N>` prefix under
/// journald.
///
/// Under systemd, stderr goes to the journal, which reads the sd-daemon(3) prefix as the
/// syslog priority: errors show red in `journalctl`, debug lines can be filtered with `-p`.
/// systemd says so with `JOURNAL_STREAM` naming stderr; without it (speakerd run by hand on a
/// terminal) the prefix would be noise, so a warning or an error says its level in words instead.
/// No timestamps: the journal adds its own.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let sink: @Sendable (String) -> Void
    /// Whether lines carry the `<N>` priority prefix journald reads.
    private let forJournal: Bool

    /// Writes to stderr; with the priority prefix only when `environment`'s `JOURNAL_STREAM`
    /// names stderr itself (systemd connected stderr to the journal).
    public init(label: String, environment: [String: String]) {
        self.init(label: label, forJournal: Self.isJournal(environment, standardError: Self.standardErrorIdentity()),
                  sink: JournalLogHandler.writeToStandardError)
    }

    /// Writes each finished line (newline included) to `sink`, with the priority prefix unless
    /// `forJournal` is false; for tests.
    public init(label: String, forJournal: Bool = true, sink: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.forJournal = forJournal
        self.sink = sink
    }

    /// Whether stderr is the journal: systemd sets `JOURNAL_STREAM` to the device and inode
    /// (`DEV:INO`, decimal) of the stream it connected a service's stderr to (systemd.exec(5)).
    /// The variable alone is not enough: it is inherited, so speakerd started by hand from a
    /// shell that a unit launched (or `systemd-run --pty`) has it with stderr on the terminal;
    /// there the prefix would be noise, so it must name stderr itself.
    public static func isJournal(_ environment: [String: String], standardError: FileIdentity?) -> Bool {
        guard let value = environment["JOURNAL_STREAM"], let standardError else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        return standardError == FileIdentity(device: device, inode: inode)
    }

    /// A file's identity as `JOURNAL_STREAM` gives it.
    public struct FileIdentity: Equatable, Sendable {
        public var device: UInt64
        public var inode: UInt64

        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }
    }

    /// stderr's device and inode; nil when it is closed.
    public static func standardErrorIdentity() -> FileIdentity? {
        var info = stat()
        guard fstat(2, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The syslog priority the journal files a message under.
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One message is one journal entry: embedded newlines would split it.
        let text = "\(event.message)\(fields)".map { $0.isNewline ? " " : $0 }
        if forJournal {
            sink("<\(Self.priority(of: event.level))>\(label): \(String(text))\n")
        } else {
            sink("\(label): \(Self.levelWord(event.level))\(String(text))\n")
        }
    }

    /// On a terminal, what a priority prefix would have said, where it matters.
    static func levelWord(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug, .info, .notice: ""
        case .warning: "warning: "
        case .error, .critical: "error: "
        }
    }

    private static let stderrLock = Mutex(())

    @Sendable private static func writeToStandardError(_ line: String) {
        stderrLock.withLock { _ in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
                if written <= 0 { if errno == EINTR { continue } else { return } }
                offset += written
            }
        }
    }
}
