import SpeakerdAPI

/// What `composer-cli scan` prints when its output is not a terminal: one line per device as
/// speakerd hears it (from its `ScanCandidates` announcements), so a script or `tee` sees a
/// speaker the moment it turns up rather than after the whole scan; then, when the scan's answer
/// comes, the devices only it had (known speakers not heard this time) and a closing line.
///
/// A device is printed once, the first time an announcement carries it: one heard with its signal
/// strength, one BlueZ already knew but has not heard this time with "—" (it is known now, so
/// it is not held back to the end); later announcements of it (its signal changing) print
/// nothing. Which devices are listed follows `scan`'s rule: audio sinks only, every device with
/// `--all`.
public struct ScanStream: Sendable {
    public let showAll: Bool
    private var printed: Set<String> = []

    public init(showAll: Bool) { self.showAll = showAll }

    /// The lines for the devices in an announcement not printed yet, the heard ones first.
    public mutating func lines(announced report: ScanReport) -> [String] {
        let listed = report.listed(all: showAll).candidates
        return (listed.filter { $0.rssi != nil } + listed.filter { $0.rssi == nil }).compactMap { print($0) }
    }

    /// The lines that end the stream: the devices of the scan's answer not printed yet (best
    /// first), then what was left out or that nothing was found.
    public mutating func lines(finishedWith report: ScanReport) -> [String] {
        let listed = report.listed(all: showAll)
        var lines = listed.candidates.compactMap { print($0) }
        let hidden = report.candidates.count - listed.candidates.count
        if printed.isEmpty {
            lines.append(listed.humanReadable + (hidden > 0 ? " " + ScanReport.otherDevicesNote(hidden) : ""))
        } else if hidden > 0 {
            lines.append("(\(hidden) not shown: --all)")
        }
        return lines
    }

    private mutating func print(_ candidate: ScanReport.Candidate) -> String? {
        printed.insert(candidate.address).inserted ? Self.line(candidate) : nil
    }

    /// One device: address, name, signal and notes, two spaces apart (no table to align to,
    /// since the widest name is not known until the scan ends).
    public static func line(_ candidate: ScanReport.Candidate) -> String {
        var notes: [String] = []
        if candidate.known { notes.append("known") }
        if !candidate.audioSink { notes.append("not a speaker") }
        let signal = candidate.rssi.map { "\($0) dBm" } ?? "—"
        return ([candidate.address, candidate.name, signal] + (notes.isEmpty ? [] : [notes.joined(separator: ", ")]))
            .joined(separator: "  ")
    }
}
