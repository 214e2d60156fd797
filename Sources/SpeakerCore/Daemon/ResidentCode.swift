import Glibc

/// Lets go of the pages of speakerd's own code that the idle daemon no longer runs, and of the
/// free pages malloc keeps.
///
/// Why: speakerd's image (its program, or the installed `libSpeakerCore.so`) holds the Swift
/// runtime and FoundationEssentials, about 14 MB of code. The kernel maps file pages around each
/// fault (`fault_around_bytes`, 64 KiB), so start-up, which touches code all over the image,
/// leaves about 10 MiB of it mapped into the daemon for good: clean pages, but counted in its
/// PSS, and kept on the active list (mapped executable pages get an extra turn before reclaim).
/// Measured (docs/BENCHMARKS.md), that is most of the gap between the idle daemon and `fluidsynth
/// -is` holding the same soundfont; their anonymous memory is within 10 %.
///
/// `madvise(MADV_DONTNEED)` on those private, never-written file mappings only drops the page
/// table entries: the pages stay in the page cache for the kernel to keep or reclaim, and the
/// code that runs afterwards faults back in from there (minor faults, microseconds each). Code
/// is never written, so nothing is lost; a thread running meanwhile just faults. Only our own
/// image is released, never a shared library other programs map. Then `malloc_trim(0)` gives
/// back the free pages inside malloc's arenas (start-up's and a song's transient buffers: about
/// 2.5 MiB after start-up).
enum ResidentCode {
    /// What one release dropped.
    struct Released: Equatable, Sendable {
        /// Executable mappings released.
        var mappings = 0
        /// What of them was resident, in bytes.
        var residentBytes = 0
    }

    /// Releases the executable mappings of our own image: the program itself and the private
    /// libraries installed beside it (`../lib/speakerd/`), then trims malloc's arenas.
    /// Best-effort: if `/proc` cannot be read, no code is released.
    @discardableResult
    static func release() -> Released {
        defer { trimHeap() }
        guard let program = readLink("/proc/self/exe"), let smaps = readProcFile("/proc/self/smaps") else {
            return Released()
        }
        let libraries = privateLibraryDirectory(of: program)
        var released = Released()
        for mapping in releasableMappings(in: smaps) where mapping.path == program || mapping.path.hasPrefix(libraries) {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start), mapping.end > mapping.start else { continue }
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
                released.mappings += 1
                released.residentBytes += mapping.residentBytes
            }
        }
        return released
    }

    /// glibc's `malloc_trim(0)`: the free pages inside malloc's arenas go back to the kernel too
    /// (found at run time: not every C library has it, and Swift's Glibc module does not declare it).
    private static func trimHeap() {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }

    struct Mapping: Equatable {
        var start: UInt
        var end: UInt
        var path: String
        var residentBytes: Int
    }

    /// The mappings of a `/proc/PID/smaps` text that are safe to drop: private, executable,
    /// read-only file mappings none of whose pages was ever written here. A page written through
    /// a private mapping (text relocations, a debugger's breakpoint) becomes an anonymous copy,
    /// which dropping would lose, so a mapping with any `Anonymous` is kept. (`Private_Dirty`
    /// alone is no sign: a program just built or installed has page-cache pages not yet written
    /// back to disk, which show as dirty yet are the file's own.)
    static func releasableMappings(in smaps: String) -> [Mapping] {
        var mappings: [Mapping] = []
        var current: Mapping?
        var written = false
        func finish() {
            if let mapping = current, !written { mappings.append(mapping) }
            current = nil
            written = false
        }
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                guard current != nil, fields.count >= 2, let value = Int(fields[1]) else { continue }
                switch first {
                case "Rss:": current?.residentBytes = value * 1024
                case "Anonymous:": if value > 0 { written = true }
                default: break
                }
                continue
            }
            // A mapping's header: "start-end perms offset dev inode path".
            finish()
            let range = first.split(separator: "-")
            guard fields.count == 6, fields[1] == "r-xp", range.count == 2,
                  let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16) else { continue }
            let path = fields[5].drop { $0 == " " }
            guard path.hasPrefix("/") else { continue }
            current = Mapping(start: start, end: end, path: String(path), residentBytes: 0)
        }
        finish()
        return mappings
    }

    /// `/usr/bin/speakerd` → `/usr/lib/speakerd/`, where scripts/link-shared installs the library.
    static func privateLibraryDirectory(of program: String) -> String {
        let bin = program.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        return bin.dropLast().joined(separator: "/") + "/lib/speakerd/"
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `/proc` files say they are empty, so they are read until end of file.
    private static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
