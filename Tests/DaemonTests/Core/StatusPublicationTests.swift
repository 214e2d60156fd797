import CustomDump
@testable import Daemon
import PropertyBased
import SpeakerdAPI
import Systemd
import Testing

/// What speakerd publishes, as scenarios on the value: statuses in, systemd's words and the
/// API's properties and signals out.
@Suite("Publishing: READY=1 once, only what changed, nothing to systemd after STOPPING=1")
struct StatusPublicationTests {
    static let flip = StatusReport.Speaker(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true)

    static func status(_ message: String, readiness: String = "speakerConnected", speaker: StatusReport.Speaker? = flip,
                       playing: String = "idle", volume: Int? = nil) -> StatusReport {
        StatusReport(readiness: readiness, message: message, speaker: speaker, playback: .init(state: playing), volume: volume)
    }

    @Test("the first status publishes what it has; a later one only what changed, the Status property always")
    func onlyWhatChanged() {
        var publication = StatusPublication()
        let first = Self.status("Connected to JBL Flip 5")
        expectNoDifference(publication.step(.status(first)), [
            .notify([.status("Connected to JBL Flip 5")]),
            .statusProperty("Connected to JBL Flip 5"),
            .readiness("speakerConnected"),
            .speaker(Self.flip),
            .playback(first.playback),
        ], "no volume is no news: the property starts without one")
        expectNoDifference(publication.step(.status(first)), [.statusProperty("Connected to JBL Flip 5")])
        let ready = Self.status("Ready to play on JBL Flip 5", readiness: "playbackReady", volume: 40)
        expectNoDifference(publication.step(.status(ready)), [
            .notify([.status("Ready to play on JBL Flip 5")]),
            .statusProperty("Ready to play on JBL Flip 5"),
            .readiness("playbackReady"),
            .volume(40),
        ])
    }

    @Test("READY=1 goes once, with the status line; after STOPPING=1 no STATUS= follows, while the bus still hears the status")
    func readyOnceAndStoppingLast() {
        var publication = StatusPublication()
        expectNoDifference(publication.step(.apiServing(statusLine: "Starting…")), [.notify([.ready, .status("Starting…")])])
        expectNoDifference(publication.step(.apiServing(statusLine: "Starting…")), [])
        expectNoDifference(publication.step(.stopping(statusLine: "Stopping")), [.notify([.stopping, .status("Stopping")])])
        let effects = publication.step(.status(Self.status("Not connected")))
        #expect(!effects.contains { if case .notify = $0 { true } else { false } }, "\(effects)")
        #expect(effects.contains(.statusProperty("Not connected")))
    }

    @Test("any sequence of statuses: each property and signal is sent exactly when its value differs from the last one published")
    func invariants() async {
        let messages = ["Starting…", "Connecting to JBL Flip 5…", "Ready to play on JBL Flip 5"]
        let readiness = ["started", "speakerConnected", "playbackReady"]
        let speakers: [StatusReport.Speaker?] = [nil, Self.flip, .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: false)]
        await propertyCheck(count: 1_000, input: Gen.int(in: 0...999).array(of: 1...30)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var publication = StatusPublication()
            var last: StatusReport?
            for code in codes {
                let status = Self.status(messages[code % 3], readiness: readiness[code / 3 % 3], speaker: speakers[code / 9 % 3],
                                         playing: code / 27 % 2 == 0 ? "idle" : "playing", volume: code / 54 % 2 == 0 ? nil : code % 101)
                let effects = publication.step(.status(status))
                #expect(effects.contains(.notify([.status(status.message)])) == (last?.message != status.message))
                #expect(effects.contains(.readiness(status.readiness)) == (last?.readiness != status.readiness))
                #expect(effects.contains(.speaker(status.speaker)) == (last?.speaker != status.speaker))
                #expect(effects.contains(.volume(status.volume)) == (last?.volume != status.volume))
                #expect(effects.contains(.playback(status.playback)) == (last?.playback != status.playback))
                last = status
            }
        }
    }
}
