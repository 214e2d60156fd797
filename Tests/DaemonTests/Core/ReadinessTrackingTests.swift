import AudioPath
import BlueZ
import CustomDump
@testable import Daemon
import PropertyBased
import SpeakerdAPI
import Testing

/// Readiness derived from what is observed, as scenarios on the value: inputs in; the gate's
/// moves, the player's reason, the status and the journal's line out.
@Suite("Readiness follows what is observed: the gate, the player, status and the journal")
struct ReadinessTrackingTests {
    static let flip = LinkSnapshot.Target(address: try! BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5", why: .lastKnown)
    static let pcm = AudioRoute.standIn("BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink")

    static func tracking() -> ReadinessTracking {
        ReadinessTracking(inputs: ReadinessInputs(soundfont: .notLoaded(path: "/usr/share/sounds/sf2/TimGM6mb.sf2")))
    }

    /// Feeds `inputs` in order and returns the effects of the last.
    static func feed(_ tracking: inout ReadinessTracking, _ inputs: ReadinessTracking.Input...) -> [ReadinessTracking.Effect] {
        var last: [ReadinessTracking.Effect] = []
        for input in inputs { last = tracking.step(.observed(input)) }
        return last
    }

    @Test("the known speaker at boot: the gate rises with each input to ready, the journal says ready on which speaker through what, once")
    func knownSpeakerAtBoot() {
        var tracking = Self.tracking()
        _ = Self.feed(&tracking, .bus(true), .bluetooth(.ready), .soundfont(.loaded))
        #expect(tracking.gateLevel < .speakerConnected)
        let connected = Self.feed(&tracking, .link(LinkSnapshot(target: Self.flip, connected: true)))
        #expect(connected.contains(.moveGate(to: .speakerConnected)), "\(connected)")
        expectNoDifference(Self.feed(&tracking, .audioPath(.ready(Self.pcm))), [
            .moveGate(to: .playbackReady),
            .log(.info, "ready to play on JBL Flip 5 (11:22:33:AA:BB:CC) through \(Self.pcm)"),
            .tellPlayer(waitingFor: nil),
            .publishStatus,
        ])
        expectNoDifference(Self.feed(&tracking, .audioPath(.ready(Self.pcm))), [.publishStatus], "the same world said again")
    }

    @Test("the speaker switched off: the gate drops below ready, the player hears why, the journal says it once however often the retries come")
    func speakerSwitchedOff() {
        var tracking = Self.tracking()
        _ = Self.feed(&tracking, .bus(true), .bluetooth(.ready), .soundfont(.loaded),
                      .link(LinkSnapshot(target: Self.flip, connected: true)), .audioPath(.ready(Self.pcm)))
        let lost = Self.feed(&tracking, .link(LinkSnapshot(target: Self.flip, connected: false, activity: .retrying(in: .seconds(1)))))
        #expect(lost.first == .moveGate(to: tracking.verdict.level) && tracking.verdict.level < .speakerConnected, "\(lost)")
        #expect(lost.contains(.tellPlayer(waitingFor: tracking.verdict.waitingFor)))
        #expect(lost.contains { if case .log(.notice, let line) = $0 { line.hasPrefix("not ready to play on JBL Flip 5") } else { false } })

        var lines = 0
        for delay in [2, 4, 8, 16] {
            let retry = Self.feed(&tracking, .link(LinkSnapshot(target: Self.flip, connected: false, activity: .connecting)),
                                  .link(LinkSnapshot(target: Self.flip, connected: false, activity: .retrying(in: .seconds(delay)))))
            lines += retry.count { if case .log = $0 { true } else { false } }
        }
        #expect(lines == 0, "each retry of a speaker left off was logged")
    }

    @Test("after a stop is asked for nothing about readiness is logged, but the gate still follows the world")
    func stopMutes() {
        var tracking = Self.tracking()
        _ = Self.feed(&tracking, .bus(true), .bluetooth(.ready), .soundfont(.loaded))
        _ = tracking.step(.stopRequested)
        let effects = Self.feed(&tracking, .link(LinkSnapshot(target: Self.flip, connected: true)), .audioPath(.ready(Self.pcm)))
        #expect(!effects.contains { if case .log = $0 { true } else { false } })
        #expect(tracking.gateLevel == .playbackReady)
    }

    @Test("any sequence of observations: the gate stands at the verdict of the inputs as they are, moved once per change; the player told exactly when the reason or readiness changes; status told every time")
    func invariants() async {
        let bluetooth: [ReadinessInputs.Bluetooth] = [.unknown, .ready, .blocked(.noBlueZ), .blocked(.noAdapter(configured: nil))]
        let links = [LinkSnapshot.none, LinkSnapshot(target: Self.flip), LinkSnapshot(target: Self.flip, connected: true),
                     LinkSnapshot(target: Self.flip, connected: true, servicesResolved: false),
                     LinkSnapshot(target: Self.flip, activity: .retrying(in: .seconds(4))), LinkSnapshot(target: Self.flip, activity: .heldByUser)]
        let paths: [ReadinessInputs.AudioPath] = [.unknown, .ready(Self.pcm), .notReady(.noAudioDevice("JBL Flip 5", "no PCM yet")),
                                                  .notReady(.soundServerUnreachable("no sound server"))]
        let fonts: [ReadinessInputs.Soundfont] = [.notLoaded(path: "/x.sf2"), .loading(path: "/x.sf2"), .loaded, .failed("no /x.sf2")]
        let choosing: [ReadinessInputs.Choosing] = [.startUp, .autoPickScanning, .user]
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...9_999).array(of: 1...40)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var tracking = Self.tracking()
            var gate = DaemonReadiness.started
            for code in codes {
                let n = code / 6
                let input: ReadinessTracking.Input = switch code % 6 {
                case 0: .bus(n % 4 != 0)
                case 1: .bluetooth(bluetooth[n % bluetooth.count])
                case 2: .link(links[n % links.count])
                case 3: .audioPath(paths[n % paths.count])
                case 4: .soundfont(fonts[n % fonts.count])
                default: .choosing(choosing[n % choosing.count])
                }
                let before = tracking.verdict
                let effects = tracking.step(.observed(input))
                let moves = effects.compactMap { if case .moveGate(let level) = $0 { level } else { nil } }
                #expect(moves.count <= 1)
                if let level = moves.first {
                    #expect(level != gate, "moved the gate to where it stood")
                    gate = level
                }
                #expect(gate == tracking.inputs.verdict.level, "the gate is not at what the inputs prove")
                let told = effects.contains { if case .tellPlayer = $0 { true } else { false } }
                let after = tracking.verdict
                #expect(told == (before.waitingFor != after.waitingFor || (before.level == .playbackReady) != (after.level == .playbackReady)))
                #expect(effects.last == .publishStatus)
            }
        }
    }
}
