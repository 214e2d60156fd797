import ArgumentParser
import Foundation
import Glibc
import ComposerCLIKit
import SpeakerdAPI

struct StartupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "Shows the last start-up's timeline: each operation, when it ran and how it ended.",
        discussion: "On a terminal it draws a chart, one bar per operation with the critical path marked; "
            + "piped, it prints a table. When start-up ran again since boot (bluetoothd came back, an adapter "
            + "was plugged in), the boot's run is shown first and the latest beside it, each under a heading.")

    @Option(help: ArgumentHelp("Also write the chart as an SVG picture to this file ('-': only the picture, to standard output).",
                               valueName: "file"),
            completion: .file(extensions: ["svg"]))
    var svg: String?

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let report = try await common.daemon().startup()
        if svg == "-" {
            // The picture alone, so `startup --svg - > chart.svg` or a pipe gets a valid document.
            print(StartupSVG(report: report).document, terminator: "")
            return
        }
        if let svg {
            do {
                try Data(StartupSVG(report: report).document.utf8).write(to: URL(fileURLWithPath: svg))
            } catch {
                throw SpeakerdError.local("cannot write \(svg): \((error as NSError).localizedDescription)")
            }
        }
        if common.json {
            print(ReportJSON.encode(report))
        } else if isatty(STDOUT_FILENO) == 1 {
            let width = Terminal.width()
            if let boot = report.bootRun {
                print(boot.runHeading + ":\n" + StartupChart(report: boot).rendered(width: width) + "\n")
                print(report.runHeading + ":")
            }
            print(StartupChart(report: report).rendered(width: width))
        } else {
            print(report.humanReadableWithBoot)
        }
        if let svg, !common.json {
            print("Wrote the chart to \(svg).")
        }
    }
}
