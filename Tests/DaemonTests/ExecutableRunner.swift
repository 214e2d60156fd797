import Foundation
import TestSupport

/// Runs one of the package's built executables (they sit beside the test bundle) and
/// captures what a user would see.
struct ExecutableRun {
    let status: Int32
    let standardOutput: String
    let standardError: String

    /// Spawns through `SpawnedProcess` (posix_spawn rather than Foundation's `Process`: several
    /// tests and the fake bus harness start processes at once, and concurrent `Process` use has
    /// crashed the runner inside libdispatch). Output goes to temp files (a pipe's write end can
    /// leak into a process another test spawns meanwhile, and then EOF never comes); the exit is
    /// awaited on a thread of its own, never on the test runner's small cooperative pool.
    ///
    /// `journal`: stderr as systemd makes it the journal's stream: `JOURNAL_STREAM` names the
    /// file stderr goes to (its device and inode), so speakerd writes each line's `<N>` priority.
    static func run(_ name: String, _ arguments: [String], environment extra: [String: String] = [:], journal: Bool = false,
                    whileRunning: (@Sendable (pid_t) async throws -> Void)? = nil) async throws -> ExecutableRun {
        try await run(program: productsDirectory.appendingPathComponent(name).path, arguments,
                      environment: extra, journal: journal, whileRunning: whileRunning)
    }

    /// Runs one of ours; `watching` sees its standard output so far while it runs (for output
    /// that must come as things happen, not only at the end).
    static func run(_ name: String, _ arguments: [String],
                    watching: @escaping @Sendable (_ pid: pid_t, _ outputSoFar: @escaping @Sendable () -> String) async throws -> Void)
        async throws -> ExecutableRun {
        let directory = TemporaryDirectory()
        return try await run(program: productsDirectory.appendingPathComponent(name).path, arguments, in: directory) { pid in
            try await watching(pid) { directory.read("stdout") ?? "" }
        }
    }

    /// Runs any program (e.g. `/bin/sh` as a launcher that sets the environment the way
    /// systemd does and then execs one of ours).
    static func run(program executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                    journal: Bool = false,
                    whileRunning: (@Sendable (pid_t) async throws -> Void)? = nil) async throws -> ExecutableRun {
        try await run(program: executable, arguments, environment: extra, journal: journal, in: TemporaryDirectory(),
                      whileRunning: whileRunning)
    }

    private static func run(program executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                            journal: Bool = false, in directory: TemporaryDirectory,
                            whileRunning: (@Sendable (pid_t) async throws -> Void)?) async throws -> ExecutableRun {
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        // Inherited from whoever runs the tests (a unit, `systemd-run --pty`), it names their stream.
        environment["JOURNAL_STREAM"] = nil
        environment.merge(extra) { $1 }
        if journal {
            // The file is opened with O_TRUNC at the spawn: the same inode.
            let path = directory.path + "/stderr"
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            var info = stat()
            guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
            environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        }
        let process = try SpawnedProcess.spawn(executable, arguments, environment: environment,
                                               standardOutput: .file(directory.path + "/stdout"),
                                               standardError: .file(directory.path + "/stderr"))
        if let whileRunning {
            do { try await whileRunning(process.pid) } catch { process.signal(SIGKILL) }
        }
        let status = await process.exitStatus()
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
