@testable import ComposerCLIKit
@testable import SpeakerdAPI
import Testing

/// The scan picker's keys and screens, without a terminal (PersonSessionTests drives the
/// real one through a pseudo-terminal).
@Suite("Scan picker")
struct ScanPickerTests {
    static let report = ScanReport(candidates: [
        .init(address: "11:22:33:44:55:66", name: "JBL Flip 5", rssi: -50, known: true, audioSink: true),
        .init(address: "22:33:44:55:66:77", name: "Bose Mini", rssi: -70, known: false, audioSink: true),
        .init(address: "AA:BB:CC:DD:EE:FF", name: "Somebody's phone", rssi: -40, known: false, audioSink: false),
    ])

    @Test("keys arrive as bytes: arrows in both modes, Enter, Esc, q, Ctrl-C, numbers")
    func keys() {
        #expect(ScanPicker.keys(from: Array("\u{1B}[A\u{1B}[B\u{1B}OB".utf8)) == [.up, .down, .down])
        #expect(ScanPicker.keys(from: [0x1B]) == [.escape])
        #expect(ScanPicker.keys(from: Array("\r\n".utf8)) == [.enter, .enter])
        #expect(ScanPicker.keys(from: Array("q".utf8) + [0x03]) == [.quit, .quit])
        #expect(ScanPicker.keys(from: Array("29x".utf8)) == [.digit(2), .digit(9), .other])
        // F5 (ESC [ 1 5 ~) and Ctrl-Up (ESC [ 1 ; 5 A) are one key each, not stray digits.
        #expect(ScanPicker.keys(from: Array("\u{1B}[15~\u{1B}[1;5A2".utf8)) == [.other, .other, .digit(2)])
    }

    @Test("only audio sinks unless --all; arrows wrap, a number picks its row, Enter connects it")
    func choosing() {
        var picker = ScanPicker(report: Self.report, showAll: false)
        #expect(picker.candidates.map(\.name) == ["JBL Flip 5", "Bose Mini"])
        #expect(picker.hiddenCount == 1)
        #expect(picker.handle(.up) == .redraw)
        #expect(picker.selection == 1)
        #expect(picker.handle(.down) == .redraw)
        #expect(picker.selection == 0)
        #expect(picker.handle(.digit(9)) == .redraw)  // no ninth row: nothing moves
        #expect(picker.selection == 0)
        #expect(picker.handle(.digit(2)) == .redraw)
        #expect(picker.handle(.enter) == .connect(Self.report.candidates[1]))
        var all = ScanPicker(report: Self.report, showAll: true)
        #expect(all.candidates.count == 3)
        _ = all.handle(.digit(3))
        #expect(all.handle(.enter) == .connect(Self.report.candidates[2]))
        #expect(all.handle(.escape) == .quit)
        #expect(all.handle(.quit) == .quit)
    }

    @Test("the screen: ranked rows, the selected one marked, the keys, and what --all would add")
    func screen() {
        var picker = ScanPicker(report: Self.report, showAll: false)
        _ = picker.handle(.down)
        #expect(picker.lines(width: 80, highlight: false) == [
            "Speakers found, best first:",
            "   1  JBL Flip 5  11:22:33:44:55:66  -50 dBm   known",
            "›  2  Bose Mini   22:33:44:55:66:77  -70 dBm",
            "↑/↓ or 1–2 to choose, Enter connects, Esc or q quits (1 not shown: --all)",
        ])
        #expect(picker.lines(width: 80)[2] == "\u{1B}[7m›  2  Bose Mini   22:33:44:55:66:77  -70 dBm\u{1B}[0m")
        let onlyPhone = ScanPicker(report: .init(candidates: [Self.report.candidates[2]]), showAll: false)
        #expect(onlyPhone.lines(width: 120) == [
            "No speakers found. Is the speaker on and in pairing mode? (1 other device found; --all lists it)",
        ])
        for line in ScanPicker(report: Self.report, showAll: true).lines(width: 40, highlight: false) {
            #expect(line.count <= 40, "'\(line)'")
        }
    }

    @Test("while the scan runs: a spinner with the seconds, then the speakers found so far, without a cursor")
    func liveListWhileScanning() {
        #expect(ScanPicker.scanningLines(nil, showAll: false, seconds: 3, frame: 0, width: 80)
                == ["⠋ Scanning for speakers… 3 s"])
        let lines = ScanPicker.scanningLines(Self.report, showAll: false, seconds: 4, frame: 1, width: 80)
        #expect(lines.first == "⠙ Scanning for speakers… 4 s")
        #expect(lines.count == 3, "two speakers, the phone hidden: \(lines)")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("   ") && !$0.contains("›") && !$0.contains("\u{1B}") }, "\(lines)")
        #expect(lines[1].contains("JBL Flip 5") && lines[2].contains("Bose Mini"))
    }
}
