#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import AudioPath
import BlueZ

/// The real-machine probes behind `LocalDoctor`.
public enum LocalProbes {
    @Sendable public static func fileHeader(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 12)
        var filled = 0
        while filled < header.count {
            let count = header.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }  // end of file, or a read error: what was read so far
            filled += count
        }
        return Array(header.prefix(filled))
    }

    /// Asks the kernel, through the BlueZ module's libbluetooth probe (`KernelBluetooth`): an
    /// `AF_BLUETOOTH` socket exists only with Bluetooth support, and `HCIGETDEVLIST` lists the
    /// controllers it knows. When the kernel refuses the question itself (a sandbox may deny the
    /// socket), `/sys/class/bluetooth` still names them.
    @Sendable public static func kernelBluetooth() -> KernelBluetoothFinding {
        switch KernelBluetooth.listControllers() {
        case .noBluetoothInKernel:
            return .unsupported
        case .controllers(let controllers):
            return controllers.isEmpty ? .noControllers : .controllers(controllers.map(\.name).sorted())
        case .unavailable:
            let names = directoryEntries("/sys/class/bluetooth")
                .filter { $0.hasPrefix("hci") && !$0.contains(":" as Character) }.sorted()
            return names.isEmpty ? .noControllers : .controllers(names)
        }
    }

    /// A D-Bus address value with its `%XX` byte escapes decoded (the D-Bus specification,
    /// "Server Addresses"); nil when an escape is malformed or the bytes are not UTF-8.
    static func unescape(_ value: String) -> String? {
        var bytes: [UInt8] = []
        var rest = value.utf8[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = rest.popFirst().flatMap(hexDigit), let low = rest.popFirst().flatMap(hexDigit)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Why the state directory cannot hold speakerd's state, with the fix; nil when it can (or
    /// does not exist yet: speakerd, or systemd's `StateDirectory=`, creates it). Writability is
    /// judged only where this user's answer is speakerd's too (root, or the directory's owner):
    /// an ordinary user running `doctor` cannot write /var/lib/speakerd, and need not.
    @Sendable public static func stateDirectoryProblem(_ directory: String) -> String? {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            return errno == ENOENT ? nil : "\(directory): \(String(cString: strerror(errno)).lowercased())"
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return "\(directory) is not a directory; remove it (systemd's StateDirectory= recreates it)"
        }
        let me = geteuid()
        guard me == 0 || me == info.st_uid else { return nil }
        guard access(directory, W_OK) == 0 else {
            return "\(directory) cannot be written (\(String(cString: strerror(errno)).lowercased())); "
                + "make it writable by the speakerd user, or check that its file system is not read-only"
        }
        return nil
    }

    /// Connects a stream socket to the first `unix:path=` or `unix:abstract=` in a D-Bus
    /// address; enough to tell "no bus there" from "bus there" without speaking D-Bus.
    @Sendable public static func reachBus(_ address: String) -> String? {
        for entry in address.split(separator: ";") where entry.hasPrefix("unix:") {
            for pair in entry.dropFirst(5).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, parts[0] == "path" || parts[0] == "abstract" else { continue }
                return UnixSocketProbe.connect(name: unescape(parts[1]) ?? parts[1], abstract: parts[0] == "abstract")
            }
        }
        return "no unix:path= or unix:abstract= transport in the address"
    }

    /// The names in a directory, without `.` and `..` (empty when it cannot be read).
    @Sendable public static func directoryEntries(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// A user's home directory, by name or numeric id.
    static func homeDirectory(of user: String) -> String? {
        let entry = UInt32(user).map { getpwuid($0) } ?? getpwnam(user)
        guard let entry, let home = entry.pointee.pw_dir else { return nil }
        return String(cString: home)
    }
}
