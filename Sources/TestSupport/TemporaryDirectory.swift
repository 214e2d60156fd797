import Foundation

/// A fresh directory per test, removed when the test ends, so tests can run in parallel.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() {
        var template = Array((NSTemporaryDirectory().trimmingCharacters(in: ["/"]).isEmpty ? "/tmp/speakerd-test-XXXXXX" : "/" + NSTemporaryDirectory().trimmingCharacters(in: ["/"]) + "/speakerd-test-XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { buffer in
            guard let created = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp failed") }
            return String(cString: created)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func write(_ text: String, to name: String) {
        _ = FileManager.default.createFile(atPath: path + "/" + name, contents: Data(text.utf8))
    }

    public func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    public func entries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

extension TemporaryDirectory {
    /// A fresh directory for one test as a URL, for tests that hand URLs around; the test removes
    /// it itself (`defer { try? FileManager.default.removeItem(at: directory) }`).
    public static func makeURL(prefix: String = "speakerd-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
