@testable import AudioPath
@testable import BlueZ
import DBus
import Foundation
import TestSupport
import Testing

/// The speaker's volume through BlueALSA's `org.bluealsa.PCM1.Volume`: both shapes BlueALSA has
/// published (`q` in 4.0/4.1, `ay` since 4.2), mute bits left alone, and a round trip through the
/// BlueALSA mock on a private bus.
@Suite("BlueALSA PCM volume", .timeLimit(.minutes(1)))
struct BlueALSAVolumeTests {
    @Test("percent maps onto 0…127 per channel in either shape, and a muted channel stays muted")
    func conversion() {
        #expect(BlueALSAVolume.percent(of: .array(element: "y", [.byte(127), .byte(127)])) == 100)
        #expect(BlueALSAVolume.percent(of: .array(element: "y", [.byte(0x80 | 64), .byte(0)])) == 50)
        #expect(BlueALSAVolume.percent(of: .uint16(0x7F00)) == 100, "the left channel is the high byte")
        #expect(BlueALSAVolume.percent(of: .string("loud")) == nil)
        #expect(BlueALSAVolume.setting(.array(element: "y", [.byte(127), .byte(0x80 | 127)]), to: 40)
                == .array(element: "y", [.byte(51), .byte(0x80 | 51)]))
        #expect(BlueALSAVolume.setting(.uint16(0xE464), to: 50) == .uint16(0xC040), "BlueALSA 4.0's q keeps its shape and mute bit")
        #expect(BlueALSAVolume.setting(.uint16(0), to: 100) == .uint16(0x7F7F))
    }

    @Test("'volume 40' on a speaker whose PCM is at full volume leaves the mock's PCM at 51/127 per channel; an old BlueALSA's q stays a q")
    func roundTripThroughTheMock() async throws {
        let mock = try await MockBlueALSA.start()
        let source = BlueALSADBusPCMSource(connection: mock.bus)
        let pcm = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")

        // The route the path is ready on names the PCM it found, which is where the volume is set.
        let backend = AutomaticBackend(blueALSA: BlueALSABackend(source: source))
        var states = backend.paths(to: TargetSpeaker(address: try BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5"),
                                   over: nil).makeAsyncIterator()
        let route = try #require(await states.next()?.state.route)
        #expect(route.description == "BlueALSA PCM \(pcm.rawValue)")
        #expect(route.device == pcm.rawValue)
        let volume = try backend.volume(on: route)
        #expect(volume.deviceDescription == "BlueALSA PCM \(pcm.rawValue)")

        #expect(try await volume.percent() == 100)
        #expect(try await volume.setPercent(40) == 40)
        #expect(try await mock.volume(of: pcm) == .array(element: "y", [.byte(51), .byte(51)]))

        // bluez-alsa 4.0 (Debian 12) publishes a q: left high byte, right low byte, bit 7 mutes.
        try await mock.setVolume(of: pcm, to: .uint16(0xE464))
        #expect(try await volume.percent() == 79)
        #expect(try await volume.setPercent(50) == 50)
        #expect(try await mock.volume(of: pcm) == .uint16(0xC040))
        await mock.stop()
    }

    /// A world with BlueZ and BlueALSA as Debian runs it (no `--a2dp-volume`: the PCM's
    /// `SoftVolume` is true), the speaker's PCM published; with `absoluteVolume`, BlueZ's transport
    /// for the speaker has the `Volume` real bluetoothd shows once the speaker says it takes it.
    func speakerOnDebiansBlueALSA(absoluteVolume: Bool) async throws -> (FakeBusWorld, MockBlueALSA, any SpeakerVolume, DBusObjectPath) {
        let world = try await FakeBusWorld.start()
        let mock = try await MockBlueALSA.start(on: world)
        let pcm = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        try await mock.setProperty("SoftVolume", of: pcm, to: .bool(true))
        var transport: [String: DBusValue] = ["Device": .objectPath("/org/bluez/hci0/dev_11_22_33_AA_BB_CC"), "State": .string("idle")]
        if absoluteVolume { transport["Volume"] = .uint16(64) }
        _ = try await world.mock("AddObject", interface: "org.freedesktop.DBus.Mock", arguments: [
            .string("/org/bluez/hci0/dev_11_22_33_AA_BB_CC/sep1/fd0"), .string("org.bluez.MediaTransport1"),
            .properties(transport), .array(element: "(ssss)", [])], using: mock.bus)
        let volume = try #require(BlueALSADBusPCMSource(connection: mock.bus).volume(ofPCM: pcm.rawValue))
        return (world, mock, volume, pcm)
    }

    @Test("a speaker that takes AVRCP absolute volume: 'volume 30' switches BlueALSA's PCM from software volume to the speaker's own, then sets it")
    func speakersOwnVolumeWhereItHasOne() async throws {
        let (_, mock, volume, pcm) = try await speakerOnDebiansBlueALSA(absoluteVolume: true)
        #expect(try await volume.setPercent(30) == 30)
        #expect(try await mock.property("SoftVolume", of: pcm) == .bool(false), "BlueALSA still scales the samples itself")
        #expect(try await mock.volume(of: pcm) == .array(element: "y", [.byte(38), .byte(38)]))
        await mock.stop()  // and the world's bus and BlueZ
    }

    @Test("a speaker without absolute volume (or a BlueZ that cannot be asked): the software volume stays, and works")
    func softwareVolumeOtherwise() async throws {
        let (_, mock, volume, pcm) = try await speakerOnDebiansBlueALSA(absoluteVolume: false)
        #expect(try await volume.setPercent(30) == 30)
        #expect(try await mock.property("SoftVolume", of: pcm) == .bool(true))
        #expect(try await mock.volume(of: pcm) == .array(element: "y", [.byte(38), .byte(38)]))
        await mock.stop()  // and the world's bus and BlueZ

        // No BlueZ on the bus at all.
        let alone = try await MockBlueALSA.start()
        let lonePCM = try await alone.addSpeakerPCM("11:22:33:AA:BB:CC")
        try await alone.setProperty("SoftVolume", of: lonePCM, to: .bool(true))
        let loneVolume = try #require(BlueALSADBusPCMSource(connection: alone.bus).volume(ofPCM: lonePCM.rawValue))
        #expect(try await loneVolume.setPercent(30) == 30)
        #expect(try await alone.property("SoftVolume", of: lonePCM) == .bool(true))
        await alone.stop()
    }

    @Test("a PCM that is gone is a one-line failure naming it")
    func missingPCM() async throws {
        let mock = try await MockBlueALSA.start()
        let volume = try #require(BlueALSADBusPCMSource(connection: mock.bus).volume(ofPCM: "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink"))
        let error = await #expect(throws: SpeakerVolumeError.self) { try await volume.setPercent(30) }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("cannot change the volume of BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink: "), "\(text)")
        #expect(!text.contains("\n"))
        await mock.stop()
    }
}
