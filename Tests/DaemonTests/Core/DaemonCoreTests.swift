import AudioPath
import BlueZ
import CustomDump
@testable import Daemon
import PlaybackService
import PropertyBased
import SpeakerdAPI
import Testing

/// The daemon's own decisions as scenarios: the compatibility gate closing and reopening, what a
/// link change says and starts, which audio-path report counts, and nothing new once it winds down.
@Suite("Daemon core scenarios")
struct DaemonCoreTests {
    static let flip = LinkSnapshot.Target(address: try! BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5", why: .userPick)
    static let pcm = AudioRoute.standIn("BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink")

    /// A running core: the bus up, bluetoothd and the adapter ready, the soundfont loaded.
    static func running() -> DaemonCore {
        var core = DaemonCore(tracking: ReadinessTracking(inputs: ReadinessInputs(soundfont: .notLoaded(path: "/font.sf2"))),
                              configuredAdapter: nil)
        for event: DaemonCore.Event in [.start, .startupBegins, .observed(.bus(true)), .observed(.bluetooth(.ready)),
                                        .observed(.soundfont(.loaded)), .startupEnded] {
            _ = core.step(event)
        }
        return core
    }

    static func snapshot(_ target: LinkSnapshot.Target?, connected: Bool, revision: Int) -> LinkSnapshot {
        var snapshot = LinkSnapshot(target: target, connected: connected)
        snapshot.revision = revision
        return snapshot
    }

    static func logs(_ effects: [DaemonCore.Effect]) -> [String] {
        effects.compactMap { if case let .log(_, line) = $0 { line } else { nil } }
    }

    @Test("bluetoothd goes: the adapter is let go of and the gate closes before the link hears of it; back, start-up runs again")
    func bluetoothdGoesAndComesBack() throws {
        var core = Self.running()
        let gone = core.step(.bluez(.bluetoothdVanished, adapterInUse: "hci0"))
        let closed = try #require(gone.firstIndex(of: .readiness(.moveGate(to: .bus))))
        let linkHears = try #require(gone.firstIndex(of: .observeLink(.bluetoothdVanished)))
        #expect(gone.prefix(2) == [.forgetAdapter, .detachBlueZ])
        #expect(closed < linkHears, "the link's loss would be blamed on the speaker")
        #expect(core.lifecycle == .blocked(.noBlueZ))
        let back = core.step(.bluez(.bluetoothdAppeared, adapterInUse: nil))
        #expect(back.contains(.runStartupAgain(reason: "bluetoothd is back")))
        #expect(Self.logs(back) == ["bluetoothd is back; resuming start-up"])
        #expect(core.lifecycle == .starting)
        #expect(!core.step(.bluez(.bluetoothdAppeared, adapterInUse: nil)).contains { if case .runStartupAgain = $0 { true } else { false } },
                "start-up runs again once per reopening")
    }

    @Test("the adapter in use unplugged closes the gate naming the configured adapter; another adapter going changes nothing; one plugged in reopens it")
    func adapterUnplugged() {
        var core = DaemonCore(tracking: ReadinessTracking(inputs: ReadinessInputs(soundfont: .loaded)), configuredAdapter: "hci1")
        _ = core.step(.start)
        _ = core.step(.startupEnded)
        _ = core.step(.bluez(.adapterRemoved(name: "hci0", address: nil), adapterInUse: "hci1"))
        #expect(core.lifecycle == .running)
        _ = core.step(.bluez(.adapterRemoved(name: "hci1", address: nil), adapterInUse: "hci1"))
        #expect(core.lifecycle == .blocked(.noAdapter(configured: "hci1")))
        _ = core.step(.startupEnded)
        #expect(core.lifecycle == .blocked(.noAdapter(configured: "hci1")), "a run ending does not hide a closed gate")
        let plugged = core.step(.bluez(.adapterAdded(Adapter(name: "hci1", address: nil)), adapterInUse: nil))
        #expect(plugged.contains(.runStartupAgain(reason: "adapter hci1 appeared")))
    }

    @Test("the link comes up: said once and why, the speaker remembered; up again with no word from the user, it is a reconnect; a late report is ignored")
    func linkUpSaidOnce() {
        var core = Self.running()
        let up = core.step(.linkChanged(Self.snapshot(Self.flip, connected: true, revision: 2), followed: .some(nil)))
        #expect(Self.logs(up) == ["connected to JBL Flip 5 (11:22:33:AA:BB:CC), as you asked"])
        #expect(up.contains(.followAudioPath(Self.flip)))
        #expect(up.last == .remember(Self.flip, link: 1))
        #expect(core.step(.linkChanged(Self.snapshot(nil, connected: false, revision: 1), followed: .some(Self.flip))).isEmpty,
                "an older revision is a late report")
        _ = core.step(.linkChanged(Self.snapshot(Self.flip, connected: false, revision: 3), followed: .some(Self.flip)))
        let again = core.step(.linkChanged(Self.snapshot(Self.flip, connected: true, revision: 4), followed: .some(Self.flip)))
        #expect(Self.logs(again) == ["reconnected to JBL Flip 5 (11:22:33:AA:BB:CC)"])
        #expect(!again.contains(.followAudioPath(Self.flip)), "the path already followed is kept")
        _ = core.step(.linkChanged(Self.snapshot(Self.flip, connected: false, revision: 5), followed: .some(Self.flip)))
        _ = core.step(.userChose)
        let asked = core.step(.linkChanged(Self.snapshot(Self.flip, connected: true, revision: 6), followed: .some(Self.flip)))
        #expect(Self.logs(asked) == ["connected to JBL Flip 5 (11:22:33:AA:BB:CC), as you asked"])
        #expect(asked.last == .remember(Self.flip, link: 3))
    }

    @Test("an audio-path report of a follow since replaced is ignored; the latest one moves readiness, and a new follow forgets the old speaker's path")
    func audioPathReports() {
        var core = Self.running()
        _ = core.step(.linkChanged(Self.snapshot(Self.flip, connected: true, revision: 1), followed: nil))
        #expect(core.step(.audioPath(.ready(Self.pcm), latest: false)).isEmpty)
        let ready = core.step(.audioPath(.ready(Self.pcm), latest: true))
        #expect(ready.contains(.readiness(.moveGate(to: .playbackReady))))
        #expect(ready.last == .observeSpeaker)
        let followed = core.step(.pathFollowed)
        #expect(followed.contains(.readiness(.moveGate(to: .speakerConnected))))
        #expect(core.inputs.audioPath == .unknown)
    }

    @Test("winding down: a lost bus, a player's change and the speaker's care are no longer acted on")
    func windingDown() {
        var core = Self.running()
        #expect(core.step(.busLost) == [.reportBusLost])
        _ = core.step(.windingDown)
        #expect(core.step(.busLost).isEmpty)
        #expect(core.step(.playback(.idle)).isEmpty)
        #expect(!core.step(.audioPath(.ready(Self.pcm), latest: true)).contains(.observeSpeaker))
        _ = core.step(.startupEnded)
        #expect(core.lifecycle == .stopping, "a start-up ending late does not bring a stopping daemon back to running")
        _ = core.step(.stopped)
        #expect(core.lifecycle == .stopped)
    }
}

/// Seeded random sequences of the daemon's events through its core, its rules checked after every
/// step; a failing sequence shrinks to the few events that break it.
@Suite("The daemon core under any order of events")
struct DaemonCoreModelTests {
    static let events: [DaemonCore.Event] = [
        .startupBegins, .startupEnded, .blocked(.noBlueZ), .blocked(.adapterBlocked(adapter: "hci0")),
        .bluez(.bluetoothdVanished, adapterInUse: "hci0"), .bluez(.bluetoothdAppeared, adapterInUse: nil),
        .bluez(.adapterRemoved(name: "hci0", address: nil), adapterInUse: "hci0"), .bluez(.adapterAdded(Adapter(name: "hci0", address: nil)), adapterInUse: nil),
        .bluez(.adapterChanged(Adapter(name: "hci0", address: nil)), adapterInUse: "hci0"),
        .linkChanged(DaemonCoreTests.snapshot(DaemonCoreTests.flip, connected: true, revision: 0), followed: .some(nil)),
        .linkChanged(DaemonCoreTests.snapshot(DaemonCoreTests.flip, connected: false, revision: 0), followed: .some(DaemonCoreTests.flip)),
        .linkChanged(DaemonCoreTests.snapshot(nil, connected: false, revision: 0), followed: nil),
        .audioPath(.ready(DaemonCoreTests.pcm), latest: true), .audioPath(.unknown, latest: true), .audioPath(.ready(DaemonCoreTests.pcm), latest: false),
        .pathFollowed, .statusChanged, .systemSleep(starting: true), .busLost, .playback(.idle), .userChose,
        .observed(.bus(true)), .observed(.bus(false)), .observed(.bluetooth(.ready)), .observed(.soundfont(.loaded)),
        .stopRequested, .windingDown, .stopped,
    ]

    @Test("any sequence: the gate always sits at the verdict's level, start-up runs again only when the gate reopens, a late link report changes nothing, and nothing new starts once winding down",
          .shrinking(true))
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...10_000).array(of: 1...60)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var core = DaemonCore(tracking: ReadinessTracking(inputs: ReadinessInputs(soundfont: .notLoaded(path: "/font.sf2"))),
                                  configuredAdapter: nil)
            _ = core.step(.start)
            var gate = DaemonReadiness.started
            var revision = 0
            for code in codes {
                var event = Self.events[code % Self.events.count]
                // Link reports come newer each time, now and then an older one late.
                if case let .linkChanged(snapshot, followed) = event {
                    var numbered = snapshot
                    revision += code / 64 % 5 == 0 ? -1 : 1
                    numbered.revision = revision
                    event = .linkChanged(numbered, followed: followed)
                }
                let before = core
                let effects = core.step(event)
                for case let .readiness(.moveGate(level)) in effects { gate = level }
                #expect(gate == core.verdict.level || before.isWindingDown, "the gate at \(gate), the verdict at \(core.verdict.level), after \(event)")
                if effects.contains(where: { if case .runStartupAgain = $0 { true } else { false } }) {
                    #expect(before.isBlocked && !before.isWindingDown, "start-up ran again with the gate \(before.lifecycle)")
                }
                if case let .linkChanged(snapshot, _) = event, snapshot.revision <= before.inputs.link.revision {
                    #expect(effects.isEmpty, "a late link report did \(effects)")
                }
                if before.isWindingDown {
                    for effect in effects {
                        switch effect {
                        case .reportBusLost, .observeSpeaker, .heardPlayback, .runStartupAgain:
                            Issue.record("\(effect) while winding down, after \(event)")
                        default: break
                        }
                    }
                    #expect(core.isWindingDown, "winding down undone by \(event)")
                }
            }
        }
    }
}
