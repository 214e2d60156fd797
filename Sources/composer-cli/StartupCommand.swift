import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
            if let problem = writeWholeFile(Array(StartupSVG(report: report).document.utf8), to: svg) {
                throw SpeakerdError.local("cannot write \(svg): \(problem)")
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


/// Writes `bytes` to `path` (created with the user's umask, or replaced); nil when written, else
/// why not, in the C library's words.
func writeWholeFile(_ bytes: [UInt8], to path: String) -> String? {
    // Without waiting: a named pipe nobody reads would hold the open (and the command) for ever.
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0o666)
    guard fd >= 0 else {
        return errno == ENXIO ? "it is a named pipe nobody reads" : String(cString: strerror(errno))
    }
    // Writes block again, as for any file (a pipe with a reader, `--svg >(…)`, is written too).
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    var written = 0
    while written < bytes.count {
        let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
        if count < 0 {
            if errno == EINTR { continue }
            let reason = String(cString: strerror(errno))
            close(fd)
            return reason
        }
        written += count
    }
    return close(fd) == 0 ? nil : String(cString: strerror(errno))
}
