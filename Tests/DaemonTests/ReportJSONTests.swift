@testable import ComposerCLIKit
@testable import SpeakerCore
@testable import SpeakerdAPI
import Testing

@Suite("Stable JSON and human renderings of CLI reports")
struct ReportJSONTests {
    @Test("status JSON has the documented keys, with null for what is absent")
    func statusGolden() throws {
        let report = StatusReport(
            readiness: "playbackReady", message: "Playing song.mid on JBL Flip 5",
            speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
            playback: .init(state: "playing", file: "song.mid", positionSeconds: 12.5, durationSeconds: 184))
        #expect(ReportJSON.encode(report) == """
            {
              "message" : "Playing song.mid on JBL Flip 5",
              "playback" : {
                "durationSeconds" : 184,
                "file" : "song.mid",
                "positionSeconds" : 12.5,
                "state" : "playing"
              },
              "readiness" : "playbackReady",
              "speaker" : {
                "address" : "11:22:33:AA:BB:CC",
                "connected" : true,
                "name" : "JBL Flip 5"
              },
              "waitingFor" : null,
              "warnings" : [

              ]
            }
            """)
        let idle = StatusReport(readiness: "starting", message: "Starting…", speaker: nil, playback: .idle,
                                waitingFor: .init(code: "starting", message: "starting…"),
                                warnings: ["speakers will not be remembered: permission denied"])
        #expect(ReportJSON.encode(idle) == """
            {
              "message" : "Starting…",
              "playback" : {
                "durationSeconds" : null,
                "file" : null,
                "positionSeconds" : null,
                "state" : "idle"
              },
              "readiness" : "starting",
              "speaker" : null,
              "waitingFor" : {
                "code" : "starting",
                "message" : "starting…"
              },
              "warnings" : [
                "speakers will not be remembered: permission denied"
              ]
            }
            """)
        #expect(try ReportJSON.decode(StatusReport.self, from: ReportJSON.encode(report)) == report)
        #expect(try ReportJSON.decode(StatusReport.self, from: ReportJSON.encode(idle)) == idle)
    }

    @Test("a ready audio path shows in status: audioPath in --json, an Audio line, and across D-Bus; absent while not ready")
    func statusNamesTheAudioPath() throws {
        var report = StatusReport(
            readiness: "playbackReady", message: "Ready: JBL Flip 5",
            speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true), playback: .idle,
            audioPath: "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
        let json = ReportJSON.encode(report)
        #expect(json.contains("\"audioPath\" : \"PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink\""), "\(json)")
        #expect(try ReportJSON.decode(StatusReport.self, from: json) == report)
        #expect(report.humanReadable.split(separator: "\n").contains("Audio:     PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink"))
        #expect(try SpeakerdDBusRecords.status(from: SpeakerdDBusRecords.encode(report)) == report)
        report.audioPath = nil
        #expect(!ReportJSON.encode(report).contains("audioPath"))
        #expect(!report.humanReadable.contains("Audio:"))
    }

    @Test("startup JSON lists operations with startMs, endMs and outcome")
    func startupGolden() throws {
        let report = StartupReport(scenario: "regular", operations: [
            .init(name: "config", startMs: 0, endMs: 0.4, outcome: "succeeded"),
            .init(name: "connectSpeaker", startMs: 3.2, endMs: nil, outcome: "running"),
        ], criticalPath: ["config", "connectSpeaker"])
        #expect(ReportJSON.encode(report) == """
            {
              "criticalPath" : [
                "config",
                "connectSpeaker"
              ],
              "operations" : [
                {
                  "endMs" : 0.4,
                  "name" : "config",
                  "outcome" : "succeeded",
                  "startMs" : 0
                },
                {
                  "endMs" : null,
                  "name" : "connectSpeaker",
                  "outcome" : "running",
                  "startMs" : 3.2
                }
              ],
              "scenario" : "regular"
            }
            """)
        #expect(try ReportJSON.decode(StartupReport.self, from: ReportJSON.encode(report)) == report)
    }

    @Test("scan JSON lists candidates with address, name, rssi, known and audioSink")
    func scanGolden() throws {
        let report = ScanReport(candidates: [
            .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", rssi: -48, known: true, audioSink: true),
            .init(address: "22:33:44:BB:CC:DD", name: "Phone", rssi: nil, known: false, audioSink: false),
        ])
        #expect(ReportJSON.encode(report) == """
            {
              "candidates" : [
                {
                  "address" : "11:22:33:AA:BB:CC",
                  "audioSink" : true,
                  "known" : true,
                  "name" : "JBL Flip 5",
                  "rssi" : -48
                },
                {
                  "address" : "22:33:44:BB:CC:DD",
                  "audioSink" : false,
                  "known" : false,
                  "name" : "Phone",
                  "rssi" : null
                }
              ]
            }
            """)
        #expect(try ReportJSON.decode(ScanReport.self, from: ReportJSON.encode(report)) == report)
    }

    @Test("human renderings read as aligned sentences")
    func humanRenderings() {
        let status = StatusReport(
            readiness: "playbackReady", message: "Playing song.mid",
            speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
            playback: .init(state: "playing", file: "song.mid", positionSeconds: 72.9, durationSeconds: 3725))
        #expect(status.humanReadable == """
            Status:    Playing song.mid
            Readiness: playbackReady
            Speaker:   JBL Flip 5 (11:22:33:AA:BB:CC), connected
            Playback:  playing song.mid 1:12 / 1:02:05
            """)
        let startup = StartupReport(scenario: "regular", operations: [
            .init(name: "bus", startMs: 0.5, endMs: 2, outcome: "succeeded"),
            .init(name: "config", startMs: 0, endMs: 0.4, outcome: "succeeded"),
            .init(name: "connectSpeaker", startMs: 2, endMs: 25.4, outcome: "succeeded"),
        ], criticalPath: ["config", "bus", "connectSpeaker"])
        #expect(startup.humanReadable == """
            Start-up (regular), 25 ms
            Operation        start      end  outcome
            config          0.0 ms   0.4 ms  succeeded
            bus             0.5 ms   2.0 ms  succeeded
            connectSpeaker  2.0 ms    25 ms  succeeded
            Critical path: config → bus → connectSpeaker
            """)
        #expect(ScanReport(candidates: []).humanReadable == "No speakers found. Is the speaker on and in pairing mode?")
        let scan = ScanReport(candidates: [.init(address: "11:22:33:AA:BB:CC", name: "Flip", rssi: -48, known: true, audioSink: true)])
        #expect(scan.humanReadable == """
            Address            Name  Signal    Notes
            11:22:33:AA:BB:CC  Flip  -48 dBm   known
            """)
    }

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

    @Test("the bar has eighth-block resolution and never overflows")
    func barResolution() {
        #expect(ProgressLine.bar(fraction: 0.5, width: 4) == "██  ")
        #expect(ProgressLine.bar(fraction: 0.5625, width: 4) == "██▎ ")
        #expect(ProgressLine.bar(fraction: 2, width: 4) == "████")
        #expect(ProgressLine.bar(fraction: .nan, width: 3) == "   ")
    }
}
