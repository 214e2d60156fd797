@testable import ComposerCLIKit
@testable import SpeakerdAPI
import Testing

/// composer-cli's own renderings, which live with its doctor and play command in ComposerCLIKit;
/// the API's reports are SpeakerdAPITests' ReportJSONTests.
@Suite("Stable JSON of composer-cli doctor's report")
struct DoctorReportJSONTests {
    @Test("doctor JSON carries every check and an overall verdict")
    func doctorGolden() {
        let report = DoctorReport(checks: [
            .init(name: "config", outcome: .warning, detail: "no /etc/speakerd/speakerd.conf; built-in defaults apply"),
            .init(name: "bus", outcome: .problem, detail: "cannot reach unix:path=/x: No such file or directory"),
        ])
        #expect(!report.healthy)
        #expect(ReportJSON.encode(report) == """
            {
              "checks" : [
                {
                  "detail" : "no /etc/speakerd/speakerd.conf; built-in defaults apply",
                  "name" : "config",
                  "outcome" : "warning"
                },
                {
                  "detail" : "cannot reach unix:path=/x: No such file or directory",
                  "name" : "bus",
                  "outcome" : "problem"
                }
              ],
              "healthy" : false
            }
            """)
    }
}

@Suite("Play progress line")
struct ProgressLineTests {
    @Test("the line fills exactly the terminal width and shows elapsed and total")
    func exactWidth() {
        let line = ProgressLine(title: "Blue in Green", speaker: "JBL Flip 5", elapsedSeconds: 92, totalSeconds: 184, state: "playing")
        for width in [20, 40, 80, 132] {
            #expect(line.rendered(width: width).count == width)
        }
        let wide = line.rendered(width: 80)
        #expect(wide.hasPrefix("♪ Blue in Green — JBL Flip 5"))
        #expect(wide.hasSuffix("1:32 / 3:04"))
        #expect(wide.contains("███████████████ "))
    }

    @Test("a long title is cut with an ellipsis, and waiting shows the state instead of a bar")
    func truncationAndWaiting() {
        let line = ProgressLine(title: String(repeating: "Very long title ", count: 10), speaker: nil,
                                elapsedSeconds: 0, totalSeconds: nil, state: "waiting")
        let text = line.rendered(width: 60)
        #expect(text.count == 60)
        #expect(text.contains("…"))
        #expect(text.contains("(waiting)"))
    }

    @Test("play --wait shows what the daemon waits for, with a spinner that moves at each redraw")
    func waitingForReason() {
        let reason = "JBL Flip 5 is out of reach; retrying in 8 s"
        let first = ProgressLine(title: "song.mid", speaker: "JBL Flip 5", elapsedSeconds: 0, totalSeconds: 4,
                                 state: "waiting", waitingFor: reason, frame: 0)
        var second = first
        second.frame = 1
        #expect(first.rendered(width: 80) == "⠋ song.mid: waiting — \(reason)" + String(repeating: " ", count: 80 - 65))
        #expect(second.rendered(width: 80).hasPrefix("⠙ song.mid: waiting — "))
        let narrow = first.rendered(width: 30)
        #expect(narrow.count == 30 && narrow.hasSuffix("…"))
    }

    @Test("play --wait says why a song is paused: the speaker's loss (with the daemon's reason) or the user's pause (and how to resume)")
    func pausedSaysWhy() {
        let reason = "JBL Flip 5 is out of reach; retrying in 8 s"
        let lost = ProgressLine(title: "song.mid", speaker: "JBL Flip 5", elapsedSeconds: 2.9, totalSeconds: 4,
                                state: "paused", waitingFor: reason)
        let text = lost.rendered(width: 120)
        #expect(text.count == 120)
        #expect(text.hasPrefix("⏸ song.mid: paused — \(reason); it resumes when the speaker is back  0:02 / 0:04"), "\(text)")
        let byUser = ProgressLine(title: "song.mid", speaker: "JBL Flip 5", elapsedSeconds: 2.9, totalSeconds: 4, state: "paused")
        #expect(byUser.rendered(width: 80).hasPrefix("⏸ song.mid: paused — 'composer-cli resume' continues it  0:02 / 0:04"))
        #expect(byUser.rendered(width: 30).count == 30)
    }

    @Test("the bar has eighth-block resolution and never overflows")
    func barResolution() {
        #expect(ProgressLine.bar(fraction: 0.5, width: 4) == "██  ")
        #expect(ProgressLine.bar(fraction: 0.5625, width: 4) == "██▎ ")
        #expect(ProgressLine.bar(fraction: 2, width: 4) == "████")
        #expect(ProgressLine.bar(fraction: .nan, width: 3) == "   ")
    }
}
