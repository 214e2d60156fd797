import SpeakerdAPI
/// The interactive part of `composer-cli scan` on a terminal: the ranked list with a cursor,
/// moved with the arrow keys or chosen by number; Enter connects, Esc or q leaves.
///
/// A value type driven by keys, so every keystroke's effect and every screen is tested without
/// a terminal; the command only reads keys, draws `lines(width:)` and acts on the decision.
public struct ScanPicker: Equatable, Sendable {
    /// What the candidates are: speakers only, or everything the scan heard (`--all`).
    public let candidates: [ScanReport.Candidate]
    /// How many devices the scan found that are hidden because they are no audio sinks.
    public let hiddenCount: Int
    /// The highlighted row.
    public private(set) var selection = 0

    /// A key the picker understands.
    public enum Key: Equatable, Sendable {
        case up, down, enter, escape, quit, digit(Int), other
    }

    /// What to do after a key.
    public enum Decision: Equatable, Sendable {
        case redraw
        case connect(ScanReport.Candidate)
        case quit
    }

    /// - Parameter showAll: keep devices that are not audio sinks (phones, keyboards) in the list.
    public init(report: ScanReport, showAll: Bool) {
        let kept = report.listed(all: showAll).candidates
        candidates = kept
        hiddenCount = report.candidates.count - kept.count
    }

    public mutating func handle(_ key: Key) -> Decision {
        guard !candidates.isEmpty else { return key == .other ? .redraw : .quit }
        switch key {
        case .up: selection = (selection + candidates.count - 1) % candidates.count
        case .down: selection = (selection + 1) % candidates.count
        case .digit(let number) where (1...candidates.count).contains(number): selection = number - 1
        case .enter: return .connect(candidates[selection])
        case .escape, .quit: return .quit
        case .digit, .other: break
        }
        return .redraw
    }

    /// The screen: a heading, one row per candidate (the selected one marked `›` and shown in
    /// reverse video when `highlight` is set), and the keys. Rows are cut to `width` columns.
    public func lines(width: Int, highlight: Bool = true) -> [String] {
        let width = max(30, width)
        guard !candidates.isEmpty else {
            var text = "No speakers found. Is the speaker on and in pairing mode?"
            if hiddenCount > 0 { text += " " + ScanReport.otherDevicesNote(hiddenCount) }
            return [text]
        }
        let nameWidth = min(max(4, candidates.map(\.name.count).max() ?? 0), max(10, width - 48))
        var lines = ["Speakers found, best first:"]
        for (index, candidate) in candidates.enumerated() {
            var notes: [String] = []
            if candidate.known { notes.append("known") }
            if !candidate.audioSink { notes.append("not a speaker") }
            let name = candidate.name.count > nameWidth ? String(candidate.name.prefix(nameWidth - 1)) + "…" : candidate.name
            let signal = candidate.rssi.map { "\($0) dBm" } ?? "—"
            var row = (index == selection ? "› " : "  ") + leftPadded("\(index + 1)", to: 2) + "  "
                + padded(name, to: nameWidth) + "  " + candidate.address + "  " + padded(signal, to: 8)
                + (notes.isEmpty ? "" : "  " + notes.joined(separator: ", "))
            while row.hasSuffix(" ") { row.removeLast() }
            if row.count > width { row = String(row.prefix(width - 1)) + "…" }
            lines.append(index == selection && highlight ? "\u{1B}[7m" + row + "\u{1B}[0m" : row)
        }
        var footer = "↑/↓ or 1–\(candidates.count) to choose, Enter connects, Esc or q quits"
        if hiddenCount > 0 { footer += " (\(hiddenCount) not shown: --all)" }
        lines.append(footer.count > width ? String(footer.prefix(width)) : footer)
        return lines
    }

    /// The screen while the scan still runs: a spinner with the seconds so far, then the
    /// candidates found so far (no cursor yet: picking starts when the scan ends).
    public static func scanningLines(_ report: ScanReport?, showAll: Bool, seconds: Int64, frame: Int, width: Int) -> [String] {
        let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
        let heading = "\(frames[abs(frame) % frames.count]) Scanning for speakers… \(seconds) s"
        guard let report else { return [heading] }
        let picker = ScanPicker(report: report, showAll: showAll)
        guard !picker.candidates.isEmpty else { return [heading] }
        // The rows of the list, without its heading, cursor and key help.
        let rows = picker.lines(width: width, highlight: false).dropFirst().dropLast()
            .map { $0.hasPrefix("› ") ? "  " + $0.dropFirst(2) : $0 }
        return [heading] + rows
    }

    /// Turns what one read from the terminal returned into keys: arrow keys arrive as escape
    /// sequences (`ESC [ A`, or `ESC O A` in application mode), a lone ESC is the Esc key.
    public static func keys(from bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B {
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "[") || bytes[index + 1] == UInt8(ascii: "O") {
                    switch bytes[index + 2] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    default: keys.append(.other)
                    }
                    index += 3
                    // Longer sequences (F-keys, ESC [ 1 ; 5 A) end at a letter or '~'.
                    while index < bytes.count, bytes[index - 1] < 0x40 || bytes[index - 1] > 0x7E { index += 1 }
                    continue
                }
                keys.append(.escape)
            } else if byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n") {
                keys.append(.enter)
            } else if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 0x03 || byte == 0x04 {
                keys.append(.quit)  // q, Ctrl-C and Ctrl-D (raw mode turns them into bytes)
            } else if byte == UInt8(ascii: "k") {
                keys.append(.up)
            } else if byte == UInt8(ascii: "j") {
                keys.append(.down)
            } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(byte) {
                keys.append(.digit(Int(byte - UInt8(ascii: "0"))))
            } else {
                keys.append(.other)
            }
            index += 1
        }
        return keys
    }
}
