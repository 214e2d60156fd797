import Foundation

/// Runs one of the package's built executables (they sit beside the test bundle) and
/// captures what a user would see.
struct ExecutableRun {
    let status: Int32
    let standardOutput: String
    let standardError: String

    /// Runs without blocking a thread of the test runner's small cooperative pool: output goes
    /// to temp files (a pipe's write end can leak into a process another test spawns at the
    /// same moment, and then EOF never comes) and the exit is awaited through a handler.
    static func run(_ name: String, _ arguments: [String], environment extra: [String: String] = [:]) async throws -> ExecutableRun {
        let directory = TemporaryDirectory()
        let outPath = directory.path + "/stdout", errPath = directory.path + "/stderr"
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(name)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        try out.close()
        try err.close()
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
