import AsyncSignals
import DBus
import SpeakerdAPI
/// `composer-cli startup --svg FILE`: the last start-up as a picture, in the manner of
/// `systemd-analyze plot`: a time grid, one labelled bar per operation (one `<rect class="bar">`
/// each, with a `<title>` tooltip), critical-path bars in a stronger colour, the outcome in the
/// label when it is not "ok".
///
/// A standalone SVG 1.1 document with its styles inline, so it shows the same in a browser, an
/// image viewer and a README. Pure, so it is tested as XML from a recorded timeline.
public struct StartupSVG: Sendable {
    public var report: StartupReport

    public init(report: StartupReport) { self.report = report }

    static let rowHeight = 22.0
    static let labelWidth = 230.0
    static let chartWidth = 720.0
    static let top = 58.0
    static let margin = 16.0

    public var document: String {
        let operations = report.orderedOperations
        let total = max(report.totalMs, 1)
        let scale = Self.chartWidth / total
        let height = Self.top + Double(max(operations.count, 1)) * Self.rowHeight + 40
        let width = Self.margin * 2 + Self.labelWidth + Self.chartWidth + 80
        let x0 = Self.margin + Self.labelWidth
        let critical = Set(report.criticalPath)
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(Self.number(width))" height="\(Self.number(height))" \
            viewBox="0 0 \(Self.number(width)) \(Self.number(height))">
            <style>
              text { font-family: sans-serif; font-size: 12px; fill: #222; }
              .title { font-size: 15px; font-weight: bold; }
              .grid { stroke: #ddd; stroke-width: 1; }
              .tick { font-size: 10px; fill: #666; }
              .bar { fill: #9ab8d8; }
              .bar.critical { fill: #d9534f; }
              .bar.failed, .bar.timedOut { fill: #f0ad4e; }
              .label { text-anchor: end; }
            </style>
            <rect x="0" y="0" width="\(Self.number(width))" height="\(Self.number(height))" fill="#ffffff"/>
            <text class="title" x="\(Self.number(Self.margin))" y="22">\(xmlEscaped("speakerd start-up (\(report.scenario)), \(StartupReport.milliseconds(report.totalMs))"))</text>
            <text x="\(Self.number(Self.margin))" y="40">\(xmlEscaped(report.criticalPath.isEmpty ? "" : "Critical path (red): " + report.criticalPath.joined(separator: " → ")))</text>

            """
        let step = Self.gridStep(total: total)
        var tick = 0.0
        let bottom = Self.top + Double(operations.count) * Self.rowHeight
        while tick <= total + 0.0001 {
            let x = x0 + tick * scale
            out += "<line class=\"grid\" x1=\"\(Self.number(x))\" y1=\"\(Self.number(Self.top - 6))\" x2=\"\(Self.number(x))\" y2=\"\(Self.number(bottom))\"/>\n"
            out += "<text class=\"tick\" x=\"\(Self.number(x + 2))\" y=\"\(Self.number(bottom + 14))\">\(xmlEscaped(StartupReport.milliseconds(tick)))</text>\n"
            tick += step
        }
        for (row, operation) in operations.enumerated() {
            let y = Self.top + Double(row) * Self.rowHeight
            let end = operation.endMs ?? report.totalMs
            let x = x0 + operation.startMs * scale
            let barWidth = max(1.5, (end - operation.startMs) * scale)
            var classes = ["bar"]
            if critical.contains(operation.name) { classes.append("critical") }
            if operation.outcome != "ok" && operation.outcome != "succeeded" { classes.append(operation.outcome) }
            let duration = operation.endMs.map { StartupReport.milliseconds($0 - operation.startMs) } ?? "still running"
            let label = operation.name + (["ok", "succeeded"].contains(operation.outcome) ? "" : " (\(operation.outcome))")
            out += "<text class=\"label\" x=\"\(Self.number(x0 - 8))\" y=\"\(Self.number(y + 15))\">\(xmlEscaped(label))</text>\n"
            out += "<rect class=\"\(classes.joined(separator: " "))\" x=\"\(Self.number(x))\" y=\"\(Self.number(y + 3))\" "
                + "width=\"\(Self.number(barWidth))\" height=\"\(Self.number(Self.rowHeight - 6))\">"
                + "<title>\(xmlEscaped("\(operation.name): \(StartupReport.milliseconds(operation.startMs)) → \(operation.endMs.map(StartupReport.milliseconds) ?? "…"), \(duration), \(operation.outcome)"))</title></rect>\n"
            out += "<text class=\"tick\" x=\"\(Self.number(x + barWidth + 4))\" y=\"\(Self.number(y + 15))\">\(xmlEscaped(duration))</text>\n"
        }
        return out + "</svg>\n"
    }

    /// A grid line every 1, 2 or 5 × 10ⁿ ms, about ten across the chart.
    static func gridStep(total: Double) -> Double {
        let rough = max(total / 10, 0.001)
        var magnitude = 1.0
        while magnitude * 10 <= rough { magnitude *= 10 }
        while magnitude > rough { magnitude /= 10 }
        for factor in [1.0, 2.0, 5.0, 10.0] where magnitude * factor >= rough { return magnitude * factor }
        return magnitude * 10
    }

    /// Coordinates with at most one decimal, no exponent.
    static func number(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        let whole = Int(tenths) / 10, fraction = abs(Int(tenths) % 10)
        return fraction == 0 ? "\(whole)" : "\(tenths < 0 && whole == 0 ? "-" : "")\(whole).\(fraction)"
    }

}
