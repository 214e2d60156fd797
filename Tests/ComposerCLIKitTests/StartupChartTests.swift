@testable import ComposerCLIKit
import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// `composer-cli startup` drawn from a timeline recorded from a real first run (speakerd against
/// the fake BlueZ, scan_seconds = 2): Tests/Snapshots/daemon/startup-first-run.json.
@Suite("Start-up chart and SVG from a recorded timeline")
struct StartupChartTests {
    static func recorded() throws -> StartupReport {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Snapshots/daemon/startup-first-run.json").standardized
        return try JSONDecoder().decode(StartupReport.self, from: Data(contentsOf: url))
    }

    @Test("the text chart has one bar per operation on a shared axis, the critical path marked", arguments: [60, 80, 132])
    func textChart(width: Int) throws {
        let report = try Self.recorded()
        let lines = StartupChart(report: report).rendered(width: width).split(separator: "\n").map(String.init)
        #expect(lines[0] == "Start-up (first run), 2027 ms; * = critical path")
        #expect(lines[1].hasSuffix("2027 ms") && lines[1].contains("0 ms"))
        let rows = Array(lines.dropFirst(2))
        #expect(rows.count == report.operations.count)
        for line in lines { #expect(line.count <= width, "wider than \(width): '\(line)'") }
        // In start order, each named once; the critical ones with '*' and solid bars only.
        #expect(rows.map { $0.dropFirst(2).split(separator: " ").first.map(String.init) }
                == report.orderedOperations.map(\.name))
        for row in rows {
            let name = String(row.dropFirst(2).split(separator: " ")[0])
            let critical = report.criticalPath.contains(name)
            #expect(row.hasPrefix(critical ? "* " : "  "), "\(row)")
            #expect(row.contains(critical ? "█" : "▒") && !row.contains(critical ? "▒" : "█"), "\(row)")
            #expect(row.hasSuffix("  ok"))
        }
        // scanAndPick took 2 of the 2.03 s: its bar spans nearly the whole axis, starting late.
        let scan = try #require(rows.first { $0.hasPrefix("* scanAndPick") })
        let bar = scan.filter { $0 == "█" }.count
        let axis = lines[1].count - (2 + 12 + 1)
        #expect(Double(bar) >= Double(axis) * 0.95, "scanAndPick's bar is \(bar) of \(axis) columns")
        // config took 0.1 ms of 2027: still visible, one column.
        #expect(rows.first { $0.hasPrefix("* config") }?.filter { $0 == "█" }.count == 1)
    }

    @Test("the chart at 80 columns matches its snapshot")
    func chartSnapshot() throws {
        let text = StartupChart(report: try Self.recorded()).rendered(width: 80) + "\n"
        if let mismatch = snapshotMismatch(text, named: "composer-cli-startup-chart.txt") { Issue.record(Comment(rawValue: mismatch)) }
    }

    @Test("a start-up still running and one with nothing recorded still draw")
    func runningAndEmpty() {
        let running = StartupReport(scenario: "regular start", operations: [
            .init(name: "bus", startMs: 0, endMs: 10, outcome: "ok"),
            .init(name: "connectKnown", startMs: 10, endMs: nil, outcome: "running"),
        ], criticalPath: [])
        let lines = StartupChart(report: running).rendered(width: 60).split(separator: "\n")
        #expect(lines.last?.contains("…") == true && lines.last?.contains("running") == true)
        let empty = StartupChart(report: .init(scenario: "", operations: [], criticalPath: [])).rendered(width: 80)
        #expect(empty.hasSuffix("No operations recorded (speakerd has not finished a start-up yet)."))
    }

    @Test("the SVG parses as XML and has one bar per operation, critical ones marked")
    func svg() throws {
        let report = try Self.recorded()
        let parsed = SVGElements.parse(StartupSVG(report: report).document)
        #expect(parsed.elements.first?.name == "svg")
        #expect(parsed.elements.first?.attributes["xmlns"] == "http://www.w3.org/2000/svg")
        let bars = parsed.elements.filter { $0.name == "rect" && ($0.attributes["class"] ?? "").split(separator: " ").contains("bar") }
        #expect(bars.count == report.operations.count)
        let critical = bars.filter { ($0.attributes["class"] ?? "").contains("critical") }
        #expect(critical.count == report.criticalPath.count)
        // Bars sit on one axis: scanAndPick (2003 of 2027 ms) is the widest by far.
        let widths = bars.compactMap { Double($0.attributes["width"] ?? "") }
        #expect(widths.count == bars.count)
        #expect(widths.max() == widths.last, "the last bar (scanAndPick) should be the widest")
        #expect(parsed.titles.contains { $0.hasPrefix("scanAndPick: ") && $0.hasSuffix(", ok") })
    }

    @Test("names with XML's special characters stay well-formed")
    func svgEscapes() throws {
        let report = StartupReport(scenario: "a <b> & \"c\"", operations: [
            .init(name: "x<y>&'z'", startMs: 0, endMs: 1, outcome: "failed"),
        ], criticalPath: ["x<y>&'z'"])
        let parsed = SVGElements.parse(StartupSVG(report: report).document)
        #expect(parsed.titles == ["x<y>&'z': 0.0 ms → 1.0 ms, 1.0 ms, failed"])
        #expect(parsed.elements.contains { $0.attributes["class"] == "bar critical failed" })
    }
}
