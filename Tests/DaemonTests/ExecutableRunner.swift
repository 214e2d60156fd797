import Foundation

/// Runs one of the package's built executables (they sit beside the test bundle) and
/// captures what a user would see.
struct ExecutableRun {
    let status: Int32
    let standardOutput: String
    let standardError: String

    static func run(_ name: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> ExecutableRun {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(name)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ExecutableRun(status: process.terminationStatus,
                             standardOutput: String(decoding: outData, as: UTF8.self),
                             standardError: String(decoding: errData, as: UTF8.self))
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
