import AudioPath
import BlueZ
import CustomDump
@testable import Daemon
import Testing

/// The speaker's care as scenarios on its value: events in, effects out, time in the test's hand.
@Suite("The speaker's care: its profile asked for once per link, its volume given back")
struct SpeakerCareTests {
    static let flip = LinkSnapshot.Target(address: try! BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5", why: .lastKnown)
    static let charge = LinkSnapshot.Target(address: try! BluetoothAddress("11:22:33:AA:BB:DD"), name: "JBL Charge 4", why: .userPick)
    static let sink = AudioRoute.standIn("PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
    static let noDevice = AudioPathState.notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet"))

    /// A care and the time, moved only by the scenario.
    struct World {
        var care = SpeakerCare(grace: .seconds(4), firstVolume: 30, hasPlayback: true)
        var now = ErasedClock.Instant(offset: .zero)

        mutating func step(_ event: SpeakerCare.Event) -> [SpeakerCare.Effect] { care.step(event, now: now) }

        mutating func advance(by duration: Duration) { now = now.advanced(by: duration) }

        /// Connected on `link` to `target`, its audio path as given.
        mutating func observe(_ path: AudioPathState, link: Int, target: LinkSnapshot.Target? = flip,
                              connected: Bool = true) -> [SpeakerCare.Effect] {
            step(.observed(.init(target: target, connected: connected, audioPath: path, link: link)))
        }

        func instant(_ seconds: Int) -> ErasedClock.Instant { ErasedClock.Instant(offset: .seconds(seconds)) }
    }

    @Test("no audio device 4 s after connecting: one ConnectProfile(A2DP) per link, named in status; the next link without its device gets its own")
    func oneAskPerLink() {
        var world = World()
        expectNoDifference(world.step(.bluezAvailable), [])
        expectNoDifference(world.observe(Self.noDevice, link: 1), [.armGraceTimer(deadline: world.instant(4))])

        world.advance(by: .seconds(4))
        expectNoDifference(world.step(.graceEnded(deadline: world.instant(4))), [
            .log(.info, "JBL Flip 5 (11:22:33:AA:BB:CC) is connected but has no audio device after 4 s; asking BlueZ for its A2DP profile"),
            .askForProfile(target: Self.flip, onLink: 1),
        ])
        expectNoDifference(world.step(.profileAnswered(.asked, target: Self.flip, onLink: 1)), [.publishStatus])
        #expect(world.care.profileNote(onLink: 1) == "JBL Flip 5 had no audio device 4 s after connecting: asked for its A2DP audio profile once")

        // Once per link: the same observation again arms nothing.
        world.advance(by: .seconds(60))
        expectNoDifference(world.observe(Self.noDevice, link: 1), [])

        // The speaker dropped and came back without its device: a new link, its own ask, and
        // what was said of the old link is not said of the new one.
        expectNoDifference(world.observe(.unknown, link: 1, connected: false), [])
        expectNoDifference(world.observe(Self.noDevice, link: 2), [.armGraceTimer(deadline: world.instant(68))])
        #expect(world.care.profileNote(onLink: 2) == nil)
        world.advance(by: .seconds(4))
        #expect(world.step(.graceEnded(deadline: world.instant(68))).contains(.askForProfile(target: Self.flip, onLink: 2)))
    }

    @Test("BlueZ's refusal and silence are named in status; an answer for a link gone says nothing")
    func answersInStatus() {
        var world = World()
        _ = world.step(.bluezAvailable)
        _ = world.observe(Self.noDevice, link: 1)
        world.advance(by: .seconds(4))
        _ = world.step(.graceEnded(deadline: world.instant(4)))
        expectNoDifference(world.step(.profileAnswered(.timedOut(seconds: 10), target: Self.flip, onLink: 1)), [.publishStatus])
        #expect(world.care.profileNote(onLink: 1)?.hasSuffix("asked; BlueZ did not answer within 10 s for its A2DP audio profile once") == true)

        _ = world.observe(.unknown, link: 1, connected: false)
        _ = world.observe(Self.noDevice, link: 2)
        expectNoDifference(world.step(.profileAnswered(.refused("br-connection-profile-unavailable"), target: Self.flip, onLink: 1)), [])
        #expect(world.care.profileNote(onLink: 2) == nil)
    }

    @Test("the device appearing within the grace period disarms the timer; nothing is asked")
    func deviceInTime() {
        var world = World()
        _ = world.step(.bluezAvailable)
        _ = world.observe(Self.noDevice, link: 1)
        world.advance(by: .seconds(2))
        expectNoDifference(world.observe(.ready(Self.sink), link: 1), [.cancelGraceTimer])
        world.advance(by: .seconds(2))
        expectNoDifference(world.step(.graceEnded(deadline: world.instant(4))), [], "a disarmed timer that fired anyway asked")
    }

    /// The sound server's report can be taken in while the daemon is still counting the link that
    /// came up: the timer is armed for the link before. When it fires on the new link it is armed
    /// again from what is observed, and the one ask still goes out.
    @Test("a timer armed before the link was counted fires on the new link: armed again, and asks once after its own grace")
    func armedBeforeTheLinkWasCounted() {
        var world = World()
        _ = world.step(.bluezAvailable)
        expectNoDifference(world.observe(Self.noDevice, link: 0), [.armGraceTimer(deadline: world.instant(4))])
        world.advance(by: .seconds(1))
        expectNoDifference(world.observe(Self.noDevice, link: 1), [], "re-armed on every observation")
        world.advance(by: .seconds(3))
        expectNoDifference(world.step(.graceEnded(deadline: world.instant(4))), [.armGraceTimer(deadline: world.instant(8))])
        world.advance(by: .seconds(4))
        let asked = world.step(.graceEnded(deadline: world.instant(8)))
        #expect(asked.filter { if case .askForProfile = $0 { true } else { false } } == [.askForProfile(target: Self.flip, onLink: 1)])
    }

    @Test("without a BlueZ client nothing is armed; once there is one, the grace period starts")
    func waitsForBlueZ() {
        var world = World()
        expectNoDifference(world.observe(Self.noDevice, link: 1), [])
        world.advance(by: .seconds(10))
        expectNoDifference(world.step(.bluezAvailable), [.armGraceTimer(deadline: world.instant(14))])
    }

    @Test("winding down disarms the timer and stops a restore under way; nothing is armed or asked after it")
    func stopEndsEverything() {
        var world = World()
        _ = world.step(.bluezAvailable)
        _ = world.observe(Self.noDevice, link: 1)
        _ = world.step(.remembered(Self.flip.address, isNew: false, volume: 40, onLink: 1))
        expectNoDifference(world.observe(.ready(Self.sink), link: 1), [
            .cancelGraceTimer,
            .restoreVolume(.init(target: Self.flip, route: Self.sink, wanted: 40, fromMemory: true, link: 1)),
        ])
        _ = world.observe(Self.noDevice, link: 1)
        #expect(world.care.isGraceTimerArmed && world.care.isRestoringVolume)

        expectNoDifference(world.step(.stop), [.cancelGraceTimer, .cancelVolumeRestore])
        world.advance(by: .seconds(60))
        expectNoDifference(world.step(.graceEnded(deadline: world.instant(4))), [])
        expectNoDifference(world.observe(Self.noDevice, link: 2), [])
        expectNoDifference(world.observe(.ready(Self.sink), link: 2), [])
    }

    @Test("a speaker never seen before gets first_volume once its device is there, whichever comes first; status shows it once it is remembered")
    func newSpeakerGetsFirstVolume() {
        for deviceFirst in [true, false] {
            var world = World()
            let restore = SpeakerCare.Restore(target: Self.flip, route: Self.sink, wanted: 30, fromMemory: false, link: 1)
            if deviceFirst {
                expectNoDifference(world.observe(.ready(Self.sink), link: 1), [], "restored before the state file knew it")
                expectNoDifference(world.step(.remembered(Self.flip.address, isNew: true, volume: nil, onLink: 1)), [.restoreVolume(restore)])
            } else {
                expectNoDifference(world.step(.remembered(Self.flip.address, isNew: true, volume: nil, onLink: 1)), [])
                expectNoDifference(world.observe(.ready(Self.sink), link: 1), [.restoreVolume(restore)])
            }
            expectNoDifference(world.step(.restored(.done(percent: 30), restore)), [
                .log(.info, "JBL Flip 5 (11:22:33:AA:BB:CC) is new: volume set to first_volume, 30 %"),
                .rememberVolume(30, of: Self.flip.address),
            ])
            // Status shows the volume once the state file keeps it, not before.
            #expect(world.care.volumeNow == nil)
            expectNoDifference(world.step(.volumeRemembered(percent: 30, of: Self.flip.address)), [.publishStatus])
            #expect(world.care.volumeNow == SpeakerVolumeNow(address: Self.flip.address, percent: 30))
        }
    }

    @Test("a remembered volume comes back on every link, without being written again; a known speaker without one keeps its level, remembered from then on")
    func knownSpeakers() {
        var world = World()
        _ = world.step(.remembered(Self.flip.address, isNew: false, volume: 65, onLink: 1))
        let first = SpeakerCare.Restore(target: Self.flip, route: Self.sink, wanted: 65, fromMemory: true, link: 1)
        expectNoDifference(world.observe(.ready(Self.sink), link: 1), [.restoreVolume(first)])
        expectNoDifference(world.step(.restored(.done(percent: 65), first)), [
            .log(.info, "restored the volume of JBL Flip 5 (11:22:33:AA:BB:CC) to 65 %"), .publishStatus,
        ])
        expectNoDifference(world.observe(.ready(Self.sink), link: 1), [], "restored twice on one link")

        // The user turns it down; after the next reconnect that level comes back.
        expectNoDifference(world.step(.volumeSet(percent: 50, of: Self.flip, asked: .to(50))), [
            .log(.info, "volume of JBL Flip 5 (11:22:33:AA:BB:CC) set to 50 % as asked (50)"),
            .rememberVolume(50, of: Self.flip.address),
        ])
        expectNoDifference(world.step(.volumeRemembered(percent: 50, of: Self.flip.address)), [.publishStatus])
        #expect(world.care.volumeNow == SpeakerVolumeNow(address: Self.flip.address, percent: 50))
        _ = world.observe(.unknown, link: 1, connected: false)
        _ = world.step(.remembered(Self.flip.address, isNew: false, volume: 50, onLink: 2))
        expectNoDifference(world.observe(.ready(Self.sink), link: 2),
                           [.restoreVolume(.init(target: Self.flip, route: Self.sink, wanted: 50, fromMemory: true, link: 2))])

        // Another known speaker from before volumes were kept: read, kept, remembered.
        var other = World()
        _ = other.step(.remembered(Self.charge.address, isNew: false, volume: nil, onLink: 1))
        let read = SpeakerCare.Restore(target: Self.charge, route: Self.sink, wanted: nil, fromMemory: false, link: 1)
        expectNoDifference(other.observe(.ready(Self.sink), link: 1, target: Self.charge), [.restoreVolume(read)])
        expectNoDifference(other.step(.restored(.done(percent: 80), read)), [
            .log(.info, "JBL Charge 4 (11:22:33:AA:BB:DD) keeps its volume, 80 %, remembered from now on"),
            .rememberVolume(80, of: Self.charge.address),
        ])
    }

    @Test("a device that refuses is named in the journal and status keeps no volume; a restore that ends after its link went changes nothing")
    func restoreFailures() {
        var world = World()
        _ = world.step(.remembered(Self.flip.address, isNew: false, volume: 65, onLink: 1))
        let restore = SpeakerCare.Restore(target: Self.flip, route: Self.sink, wanted: 65, fromMemory: true, link: 1)
        _ = world.observe(.ready(Self.sink), link: 1)
        expectNoDifference(world.step(.restored(.failed("Access denied"), restore)), [
            .log(.notice, "could not set the volume to 65 % on JBL Flip 5 (11:22:33:AA:BB:CC): Access denied"),
        ])
        #expect(world.care.volumeNow == nil)

        var late = World()
        _ = late.step(.remembered(Self.flip.address, isNew: false, volume: 65, onLink: 1))
        _ = late.observe(.ready(Self.sink), link: 1)
        _ = late.observe(.unknown, link: 1, connected: false)
        _ = late.observe(.ready(Self.sink), link: 2)
        expectNoDifference(late.step(.restored(.done(percent: 65), restore)), [])
        #expect(late.care.volumeNow == nil)

        var file = World(care: SpeakerCare(grace: .seconds(4), firstVolume: 30, hasPlayback: true))
        _ = file.step(.remembered(Self.flip.address, isNew: true, volume: nil, onLink: 1))
        let wav = SpeakerCare.Restore(target: Self.flip, route: Self.sink, wanted: 30, fromMemory: false, link: 1)
        _ = file.observe(.ready(Self.sink), link: 1)
        expectNoDifference(file.step(.restored(.noVolume("WAV file /tmp/x.wav has no hardware volume"), wav)),
                           [.log(.debug, "no volume to restore on JBL Flip 5: WAV file /tmp/x.wav has no hardware volume")])
    }

    @Test("without a player there is no audio device to care for: no restore")
    func noPlayback() {
        var world = World(care: SpeakerCare(grace: .seconds(4), firstVolume: 30, hasPlayback: false))
        _ = world.step(.remembered(Self.flip.address, isNew: true, volume: nil, onLink: 1))
        expectNoDifference(world.observe(.ready(Self.sink), link: 1), [])
    }
}
