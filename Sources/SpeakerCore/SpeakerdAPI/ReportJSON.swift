#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one JSON encoding every `--json` report uses: sorted keys, pretty, slashes unescaped.
///
/// Sorted keys make the output byte-stable between releases and runs, so scripts and golden
/// tests can compare it; absent values are written as `null` rather than dropped, so a key
/// a script relies on is always there.
public enum ReportJSON {
    public static func encode(_ report: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Reports hold only strings, numbers, booleans and nulls: encoding cannot fail.
        let data = (try? encoder.encode(report)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    public static func decode<Report: Decodable>(_ type: Report.Type, from text: String) throws -> Report {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

/// Formats seconds as `m:ss` (or `h:mm:ss`) for people.
public func formatClock(_ seconds: Double) -> String {
    let total = max(0, Int(seconds.rounded(.down)))
    let (hours, minutes, secs) = (total / 3600, (total % 3600) / 60, total % 60)
    let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
    return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" : "\(minutes):\(twoDigits(secs))"
}

/// Pads `text` on the right to `width` characters (for aligned human tables).
public func padded(_ text: String, to width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
