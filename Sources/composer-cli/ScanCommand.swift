import ArgumentParser
import AsyncSignals
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import ComposerCLIKit
import SpeakerdAPI
import Synchronization

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Looks for Bluetooth speakers nearby and lists them, best first.",
        discussion: """
            On a terminal, pick one with the arrow keys or its number and press Enter to connect it \
            (Esc or q leaves). Piped, it prints each device as it is found, one line each, and exits \
            when the scan ends; with --json, the whole list once the scan ends.
            """)

    /// speakerd's scan_seconds otherwise; a scan another client started meanwhile is joined
    /// and kept going for as long as this one asks.
    @Option(name: .long, help: ArgumentHelp("Scan for this many seconds (1 to 300) instead of speakerd's scan_seconds.",
                                            valueName: "seconds"))
    var duration: Int?

    /// speakerd reports every device its scan heard, marking the audio sinks; without the flag
    /// the others are left out (and counted), in the list, the picker and `--json`.
    @Flag(help: "List every device speakerd reports, not only audio sinks.")
    var all = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let duration, let problem = ScanLength.problem(duration) {
            throw ValidationError("--duration: \(problem)")
        }
    }

    func run() async throws {
        let daemon = try await common.daemon()
        if common.json {
            let report = try await scan(daemon)
            common.show(json: ReportJSON.encode(report.listed(all: all)), human: report.humanReadable(all: all))
            return
        }
        guard Terminal.isInteractive else {
            try await scanStreaming(daemon)
            return
        }
        let report = try await scanShowingSpinner(daemon)
        var picker = ScanPicker(report: report, showAll: all)
        guard !picker.candidates.isEmpty else {
            print(picker.lines(width: Terminal.width()).joined(separator: "\n"))
            return
        }
        guard let terminal = RawTerminal() else {
            print(report.humanReadable(all: all))
            return
        }
        var shown = draw(picker, replacing: 0)
        var chosen: ScanReport.Candidate?
        reading: while true {
            let bytes = terminal.read()
            if bytes.isEmpty { break }
            for key in ScanPicker.keys(from: bytes) {
                switch picker.handle(key) {
                case .redraw: shown = draw(picker, replacing: shown)
                case .connect(let candidate): chosen = candidate; break reading
                case .quit: break reading
                }
            }
        }
        terminal.restore()
        guard let chosen else {
            print("No speaker chosen.")
            return
        }
        print("Connecting \(chosen.name) (\(chosen.address))…")
        fflush(nil)
        let address = try validateAddress(chosen.address)
        common.show(try await daemon.connect(address))
    }

    /// speakerd's scan: `--duration` long, or its own scan_seconds.
    private func scan(_ daemon: SpeakerdDBusClient) async throws(SpeakerdError) -> ScanReport {
        if let duration { try await daemon.scan(seconds: duration) } else { try await daemon.scan() }
    }

    /// Piped: a line per device as speakerd announces it, flushed at once, then what the
    /// answer adds (`ScanStream`).
    private func scanStreaming(_ daemon: SpeakerdDBusClient) async throws {
        let stream = Mutex(ScanStream(showAll: all))
        let announcements = try? await daemon.scanCandidates()
        let follower = Task {
            guard let announcements else { return }
            for await report in announcements {
                let lines = stream.withLock { $0.lines(announced: report) }
                guard !lines.isEmpty else { continue }
                print(lines.joined(separator: "\n"))
                fflush(nil)
            }
        }
        let result: Result<ScanReport, SpeakerdError>
        do { result = .success(try await scan(daemon)) } catch { result = .failure(error) }
        follower.cancel()
        await follower.value
        let report = try result.get()
        let closing = stream.withLock { $0.lines(finishedWith: report) }
        if !closing.isEmpty { print(closing.joined(separator: "\n")) }
    }

    /// Runs the daemon's scan (it answers after its scan_seconds) with a spinner and the seconds
    /// so far, and the speakers found so far under it as speakerd announces them; the block is
    /// cleared once the answer is in.
    private func scanShowingSpinner(_ daemon: SpeakerdDBusClient) async throws -> ScanReport {
        let found = LatestCandidates()
        let announcements = try? await daemon.scanCandidates()
        let follower = Task {
            guard let announcements else { return }
            for await report in announcements { found.report = report }
        }
        let showAll = all
        let spinner = Task {
            let started = ContinuousClock.now
            var frame = 0, shown = 0
            while !Task.isCancelled {
                let lines = ScanPicker.scanningLines(found.report, showAll: showAll,
                                                     seconds: (ContinuousClock.now - started).components.seconds,
                                                     frame: frame, width: Terminal.width() - 1)
                var text = shown > 1 ? "\u{1B}[\(shown - 1)F" : "\r"
                text += "\u{1B}[J" + lines.joined(separator: "\n")
                print(text, terminator: "")
                fflush(nil)
                shown = lines.count
                frame += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
            return shown
        }
        let result: Result<ScanReport, SpeakerdError>
        do { result = .success(try await scan(daemon)) } catch { result = .failure(error) }
        spinner.cancel()
        follower.cancel()
        let shown = await spinner.value
        print((shown > 1 ? "\u{1B}[\(shown - 1)F" : "\r") + "\u{1B}[J", terminator: "")
        return try result.get()
    }

    /// Draws the picker where the previous drawing (`replacing` lines) was; returns its height.
    private func draw(_ picker: ScanPicker, replacing previous: Int) -> Int {
        let lines = picker.lines(width: Terminal.width() - 1)
        var text = previous > 0 ? "\u{1B}[\(previous)F\u{1B}[J" : ""
        text += lines.joined(separator: "\n") + "\n"
        print(text, terminator: "")
        fflush(nil)
        return lines.count
    }
}

/// The candidates speakerd announced last during a scan, shared by the follower and the spinner.
final class LatestCandidates: Sendable {
    private let latest = Mutex<ScanReport?>(nil)
    var report: ScanReport? {
        get { latest.withLock { $0 } }
        set { latest.withLock { $0 = newValue } }
    }
}
