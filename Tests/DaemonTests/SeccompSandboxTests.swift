import Foundation
import Testing
import TestSupport
@testable import Daemon

/// speakerd under the seccomp half of systemd/speakerd.service's sandbox, with no systemd.
///
/// The unit promises MemoryDenyWriteExecute=yes, SystemCallFilter=@system-service and the rest,
/// and no PID-1 systemd runs here to start it, so these tests put the filters on with
/// Tests/Tools/systemd-seccomp-exec (which reads the unit file itself and builds systemd 252's
/// filters with libseccomp), first proving the filters bite, then running the real speakerd
/// under them through a whole start, connect, play and stop.
@Suite("speakerd under speakerd.service's seccomp filters (MemoryDenyWriteExecute and the rest)", .serialized)
struct SeccompSandboxTests {
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Tools").standardized.path
    static let launcher = tools + "/systemd-seccomp-exec"
    static let probe = tools + "/seccomp-probe"
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../systemd/speakerd.service").standardized.path

    /// The probe's `name: outcome` lines as a dictionary.
    static func outcomes(_ run: ExecutableRun) -> [String: String] {
        var result: [String: String] = [:]
        for line in run.standardOutput.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { result[parts[0]] = parts[1] }
        }
        return result
    }

    @Test("the launcher's filters bite: W+X memory, other socket families, namespaces, realtime, calls outside @system-service are refused with systemd's errno")
    func filtersBite() async throws {
        let plain = try await ExecutableRun.run(program: Self.probe, [])
        let filtered = try await ExecutableRun.run(program: Self.launcher, [Self.unit, Self.probe])
        #expect(plain.status == 0, "the probe failed on its own: \(plain.standardError)")
        #expect(filtered.status == 0, "the probe failed under the launcher: \(filtered.standardError)")
        // Unfiltered, each attempt works (or fails for its own reason), so a refusal below is the filter's doing.
        let expected: [(probe: String, unfiltered: String, filtered: String)] = [
            ("write_and_execute_mapping", "ok", "EPERM"),       // MemoryDenyWriteExecute: mmap(PROT_WRITE|PROT_EXEC)
            ("make_writable_page_executable", "ok", "EPERM"),   // MemoryDenyWriteExecute: mprotect(PROT_EXEC)
            ("internet_socket", "ok", "EAFNOSUPPORT"),          // RestrictAddressFamilies=AF_UNIX AF_BLUETOOTH
            ("unix_socket", "ok", "ok"),
            ("new_uts_namespace", "ok", "EPERM"),               // RestrictNamespaces=yes
            ("clone3", "EFAULT", "ENOSYS"),                     // RestrictNamespaces=yes: glibc falls back to clone()
            ("realtime_scheduling", "ok", "EPERM"),             // RestrictRealtime=yes
            ("mount_outside_the_allow_list", "ENOENT", "EPERM"),  // SystemCallFilter=@system-service, SystemCallErrorNumber=EPERM
            ("other_personality", "ok", "EPERM"),               // LockPersonality=yes
        ]
        let before = Self.outcomes(plain), after = Self.outcomes(filtered)
        for row in expected {
            #expect(before[row.probe] == row.unfiltered, "\(row.probe) without the filter: \(before[row.probe] ?? "no line")")
            #expect(after[row.probe] == row.filtered, "\(row.probe) under the filter: \(after[row.probe] ?? "no line")")
        }
    }

    @Test("a unit setting the launcher cannot reproduce is one line and exit 1, and the program never runs unfiltered")
    func refusesWhatItCannotApply() async throws {
        let directory = TemporaryDirectory()
        for setting in ["MemoryDenyWriteExecute=maybe", "SystemCallArchitectures=x86", "SystemCallFilter=@no-such-group",
                        "SystemCallFilter=~mount:EACCES", "RestrictNamespaces=cgroup ipc"] {
            directory.write("[Service]\nExecStart=/bin/true\n\(setting)\n", to: "odd.service")
            let marker = directory.path + "/ran"
            let run = try await ExecutableRun.run(program: Self.launcher,
                                                  [directory.path + "/odd.service", "/usr/bin/touch", marker])
            #expect(run.status == 1, "\(setting): exit \(run.status)")
            let lines = run.standardError.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.hasPrefix("systemd-seccomp-exec: ") == true,
                    "\(setting): stderr was \(run.standardError)")
            #expect(!FileManager.default.fileExists(atPath: marker), "\(setting): the program ran anyway")
        }
        let missing = try await ExecutableRun.run(program: Self.launcher,
                                                  [directory.path + "/no.service", "/usr/bin/touch", directory.path + "/ran"])
        #expect(missing.status == 1 && missing.standardError.hasPrefix("systemd-seccomp-exec: cannot read the unit file "),
                "a missing unit file: exit \(missing.status), stderr \(missing.standardError)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/ran"), "a missing unit file: the program ran anyway")
    }
}
