import Foundation

/// Compares text with a file under Tests/Snapshots/daemon (outside the test targets, so SwiftPM does not treat it as a resource); `SNAPSHOT_RECORD=1` rewrites it.
public func snapshotMismatch(_ text: String, named name: String) -> String? {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Tests/Snapshots/daemon").appendingPathComponent(name).standardized
    if ProcessInfo.processInfo.environment["SNAPSHOT_RECORD"] == "1" {
        try? text.write(to: url, atomically: true, encoding: .utf8)
        return nil
    }
    guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
        return "no snapshot \(name); run with SNAPSHOT_RECORD=1 to record it"
    }
    return expected == text ? nil : "\(name) differs:\n--- expected\n\(expected)\n--- actual\n\(text)"
}
