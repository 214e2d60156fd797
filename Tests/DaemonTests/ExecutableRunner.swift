import Foundation

/// Runs one of the package's built executables (they sit beside the test bundle) and
/// captures what a user would see.
struct ExecutableRun {
    let status: Int32
    let standardOutput: String
    let standardError: String

    /// Spawns with posix_spawn rather than Foundation's `Process`: several tests (and the fake
    /// bus harness) start processes at once, and concurrent `Process` use has crashed the
    /// runner inside libdispatch. Output goes to temp files (a pipe's write end can leak into a
    /// process another test spawns meanwhile, and then EOF never comes); the exit is awaited on
    /// a dispatch thread, never on the test runner's small cooperative pool.
    static func run(_ name: String, _ arguments: [String], environment extra: [String: String] = [:],
                    whileRunning: (@Sendable (pid_t) async throws -> Void)? = nil) async throws -> ExecutableRun {
        try await run(program: productsDirectory.appendingPathComponent(name).path, arguments,
                      environment: extra, whileRunning: whileRunning)
    }

    /// Runs any program (e.g. `/bin/sh` as a launcher that sets the environment the way
    /// systemd does and then execs one of ours).
    static func run(program executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                    whileRunning: (@Sendable (pid_t) async throws -> Void)? = nil) async throws -> ExecutableRun {
        let directory = TemporaryDirectory()
        let outPath = directory.path + "/stdout", errPath = directory.path + "/stderr"
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        environment.merge(extra) { $1 }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        let childPID = pid
        if let whileRunning {
            do { try await whileRunning(childPID) } catch { kill(childPID, SIGKILL) }
        }
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var raw: Int32 = 0
                while waitpid(childPID, &raw, 0) < 0 && errno == EINTR {}
                // WIFEXITED / WEXITSTATUS, spelled out: Glibc's macros are not imported.
                continuation.resume(returning: raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
            }
        }
        return ExecutableRun(status: status,
                             standardOutput: directory.read("stdout") ?? "",
                             standardError: directory.read("stderr") ?? "")
    }

    /// `.build/<config>/`, where SwiftPM puts executables next to the test bundle.
    static var productsDirectory: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("composer-cli").path) { return url }
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/debug").standardized
    }
}

/// Compares text with a file under Tests/Snapshots/daemon (outside the target, so SwiftPM does not treat it as a resource); `SNAPSHOT_RECORD=1` rewrites it.
func snapshotMismatch(_ text: String, named name: String) -> String? {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Snapshots/daemon").appendingPathComponent(name).standardized
    if ProcessInfo.processInfo.environment["SNAPSHOT_RECORD"] == "1" {
        try? text.write(to: url, atomically: true, encoding: .utf8)
        return nil
    }
    guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
        return "no snapshot \(name); run with SNAPSHOT_RECORD=1 to record it"
    }
    return expected == text ? nil : "\(name) differs:\n--- expected\n\(expected)\n--- actual\n\(text)"
}
