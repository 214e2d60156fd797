import AsyncSignals
import SpeakerdAPI
/// `composer-cli startup` on a terminal: a text Gantt chart of the last start-up, one bar per
/// operation on a shared time axis, the critical path marked (`*` and solid bars):
///
///     Start-up (first run), 1.84 s; * = critical path
///                        0 ms                                  1842 ms
///     * bus              █                                        3 ms  ok
///       soundfont         ▒▒▒▒▒▒▒▒▒▒▒▒▒                         612 ms  ok
///     * scan              ████████████████████████             1204 ms  ok
///
/// Pure (the command only decides whether stdout is a terminal), so it is tested from a
/// recorded timeline for every width.
public struct StartupChart: Sendable {
    public var report: StartupReport

    public init(report: StartupReport) { self.report = report }

    /// Glyphs for bars: solid on the critical path, shaded off it.
    static let criticalBar: Character = "█"
    static let otherBar: Character = "▒"

    /// The chart in lines of at most `width` columns (at least 40).
    public func rendered(width: Int) -> String {
        let width = max(40, width)
        let operations = report.orderedOperations
        let total = report.totalMs
        var lines = ["Start-up (\(report.scenario)), \(StartupReport.milliseconds(total)); * = critical path"]
        guard !operations.isEmpty else {
            lines.append("No operations recorded (speakerd has not finished a start-up yet).")
            return lines.joined(separator: "\n")
        }
        let nameWidth = min(max(9, operations.map(\.name.count).max() ?? 0), width / 3)
        let outcomeWidth = max(2, operations.map(\.outcome.count).max() ?? 0)
        let durationWidth = 9
        let barWidth = max(10, width - 2 - nameWidth - 1 - 1 - durationWidth - 2 - outcomeWidth)
        let left = String(repeating: " ", count: 2 + nameWidth + 1)
        let start = "0 ms", end = StartupReport.milliseconds(total)
        lines.append(left + start + String(repeating: " ", count: max(1, barWidth - start.count - end.count)) + end)
        let critical = Set(report.criticalPath)
        for operation in operations {
            let onPath = critical.contains(operation.name)
            let name = operation.name.count > nameWidth ? String(operation.name.prefix(nameWidth - 1)) + "…" : operation.name
            let (from, to) = Self.columns(start: operation.startMs, end: operation.endMs ?? total, total: total, width: barWidth)
            var bar = String(repeating: " ", count: from)
            bar += String(repeating: onPath ? Self.criticalBar : Self.otherBar, count: to - from)
            if operation.endMs == nil { bar.removeLast(); bar += "…" }
            bar += String(repeating: " ", count: barWidth - to)
            let duration = operation.endMs.map { StartupReport.milliseconds($0 - operation.startMs) } ?? "running"
            lines.append((onPath ? "* " : "  ") + padded(name, to: nameWidth) + " " + bar + " "
                + leftPadded(duration, to: durationWidth) + "  " + operation.outcome)
        }
        if let choice = report.outputChoice { lines.append("Output: auto chose \(choice)") }
        return lines.joined(separator: "\n")
    }

    /// The columns a bar covers, `from..<to`: at least one column, so an instant still shows.
    static func columns(start: Double, end: Double, total: Double, width: Int) -> (Int, Int) {
        guard total > 0, width > 0 else { return (0, min(1, width)) }
        let scale = Double(width) / total
        let from = min(width - 1, max(0, Int((start * scale).rounded(.down))))
        let to = min(width, max(from + 1, Int((max(start, end) * scale).rounded(.up))))
        return (from, to)
    }
}

extension StartupReport {
    /// Operations in the order they started (ties by name, so the chart is stable).
    public var orderedOperations: [Operation] {
        operations.sorted { ($0.startMs, $0.name) < ($1.startMs, $1.name) }
    }

    /// When the last operation ended (or the latest start, while one still runs).
    public var totalMs: Double {
        max(operations.compactMap(\.endMs).max() ?? 0, operations.map(\.startMs).max() ?? 0)
    }
}
