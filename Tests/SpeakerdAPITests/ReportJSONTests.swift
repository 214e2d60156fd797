@testable import SpeakerdAPI
import Testing

@Suite("Stable JSON and human renderings of CLI reports")
struct ReportJSONTests {
    @Test("status JSON has the documented keys, with null for what is absent")
    func statusGolden() throws {
        let report = StatusReport(
            readiness: "playbackReady", message: "Playing song.mid on JBL Flip 5",
            speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
            playback: .init(state: "playing", file: "song.mid", positionSeconds: 12.5, durationSeconds: 184,
                            queue: [.init(file: "next.mid", durationSeconds: 61.5)]))
        #expect(ReportJSON.encode(report) == """
            {
              "message" : "Playing song.mid on JBL Flip 5",
              "playback" : {
                "durationSeconds" : 184,
                "file" : "song.mid",
                "positionSeconds" : 12.5,
                "queue" : [
                  {
                    "durationSeconds" : 61.5,
                    "file" : "next.mid"
                  }
                ],
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
                "queue" : [

                ],
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

    @Test("the audio path's rate, which songs render at, shows beside it: audioSampleRateHz in --json, 'at 48 kHz' on the Audio line, and across D-Bus; left out when the device does not say")
    func statusSaysTheAudioPathsRate() throws {
        var report = StatusReport(
            readiness: "playbackReady", message: "Ready: JBL Flip 5", speaker: nil, playback: .idle,
            audioPath: "BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink", audioSampleRateHz: 48_000)
        let json = ReportJSON.encode(report)
        #expect(json.contains("\"audioSampleRateHz\" : 48000"), "\(json)")
        #expect(try ReportJSON.decode(StatusReport.self, from: json) == report)
        #expect(try SpeakerdDBusRecords.status(from: SpeakerdDBusRecords.encode(report)) == report)
        #expect(report.humanReadable.split(separator: "\n").contains("Audio:     BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink at 48 kHz"),
                "\(report.humanReadable)")
        for (hertz, said) in [(44_100, "44.1 kHz"), (22_050, "22.05 kHz"), (11_025, "11.025 kHz"), (96_000, "96 kHz"), (8_001, "8.001 kHz")] {
            #expect(StatusReport.kilohertz(hertz) == said)
        }
        report.audioSampleRateHz = nil
        #expect(!ReportJSON.encode(report).contains("audioSampleRateHz"))
        #expect(report.humanReadable.split(separator: "\n").contains("Audio:     BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink"))
        #expect(try SpeakerdDBusRecords.status(from: SpeakerdDBusRecords.encode(report)) == report)
    }

    @Test("a playing song's place says the tempo heard there and the output's latency: in the Playback line, under stable keys, and across D-Bus")
    func statusSaysTempoAndLatency() throws {
        let playing = StatusReport.Playback(state: "playing", file: "song.mid", positionSeconds: 12.5, durationSeconds: 90,
                                            musicalPosition: .init(bar: 5, beat: 2, bars: 40, bpm: 96.54), latencyMs: 93)
        let report = StatusReport(readiness: "playbackReady", message: "Ready: JBL Flip 5", speaker: nil, playback: playing)
        #expect(report.humanReadable.split(separator: "\n").contains("Playback:  playing song.mid 0:12 / 1:30, bar 5 beat 2 of 40, 96.5 BPM (latency 93 ms)"),
                "\(report.humanReadable)")
        let json = ReportJSON.encode(report)
        #expect(json.contains("\"bpm\" : 96.5") && json.contains("\"latencyMs\" : 93"), "\(json)")
        #expect(try ReportJSON.decode(StatusReport.self, from: json) == report)
        #expect(try SpeakerdDBusRecords.status(from: SpeakerdDBusRecords.encode(report)) == report)
        // A whole tempo reads whole; an older speakerd's place has none, and a file output no latency.
        #expect(StatusReport.MusicalPosition(bar: 1, beat: 1, bars: 2, bpm: 119.98).sentence == "bar 1 beat 1 of 2, 120 BPM")
        let older = StatusReport.MusicalPosition(bar: 1, beat: 1, bars: 2)
        #expect(older.sentence == "bar 1 beat 1 of 2")
        #expect(!ReportJSON.encode(StatusReport(readiness: "playbackReady", message: "", speaker: nil,
                                                playback: .init(state: "playing", musicalPosition: older))).contains("bpm"))
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
              "run" : 1,
              "scenario" : "regular",
              "startedAfterMs" : 0
            }
            """)
        #expect(try ReportJSON.decode(StartupReport.self, from: ReportJSON.encode(report)) == report)
    }

    @Test("a later start-up's JSON keeps the boot's run beside it, under bootRun, with its reason and when it began")
    func laterRunGolden() throws {
        let boot = StartupReport(scenario: "regular", operations: [
            .init(name: "bluez", startMs: 1, endMs: 2, outcome: "failed", reason: "waiting for bluetoothd"),
        ], criticalPath: ["bluez"])
        let later = StartupReport(scenario: "regular", operations: [
            .init(name: "bluez", startMs: 0.5, endMs: 3, outcome: "succeeded"),
        ], criticalPath: ["bluez"], run: 2, startedAfterMs: 312_000, reason: "bluetoothd is back", bootRun: boot)
        #expect(ReportJSON.encode(later) == """
            {
              "bootRun" : {
                "criticalPath" : [
                  "bluez"
                ],
                "operations" : [
                  {
                    "endMs" : 2,
                    "name" : "bluez",
                    "outcome" : "failed",
                    "reason" : "waiting for bluetoothd",
                    "startMs" : 1
                  }
                ],
                "run" : 1,
                "scenario" : "regular",
                "startedAfterMs" : 0
              },
              "criticalPath" : [
                "bluez"
              ],
              "operations" : [
                {
                  "endMs" : 3,
                  "name" : "bluez",
                  "outcome" : "succeeded",
                  "startMs" : 0.5
                }
              ],
              "reason" : "bluetoothd is back",
              "run" : 2,
              "scenario" : "regular",
              "startedAfterMs" : 312000
            }
            """)
        #expect(try ReportJSON.decode(StartupReport.self, from: ReportJSON.encode(later)) == later)
        #expect(later.humanReadableWithBoot == """
            Start-up at boot:
            Start-up (regular), 2.0 ms
            Operation   start      end  outcome
            bluez      1.0 ms   2.0 ms  failed: waiting for bluetoothd
            Critical path: bluez

            Start-up run 2, 5 min 12 s after speakerd started (bluetoothd is back):
            Start-up (regular), 3.0 ms
            Operation   start      end  outcome
            bluez      0.5 ms   3.0 ms  succeeded
            Critical path: bluez
            """)
        #expect(boot.humanReadableWithBoot == boot.humanReadable, "at boot, one table and no heading")
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
            Readiness: ready to play
            Speaker:   JBL Flip 5 (11:22:33:AA:BB:CC), connected
            Playback:  playing song.mid 1:12 / 1:02:05
            """)
        var withQueue = status
        withQueue.playback.queue = [.init(file: "b.mid", durationSeconds: 62), .init(file: "c.mid", durationSeconds: 10)]
        #expect(withQueue.humanReadable.hasSuffix("Playback:  playing song.mid 1:12 / 1:02:05\nNext:      b.mid (1:02), then 1 more"),
                "\(withQueue.humanReadable)")
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
}
