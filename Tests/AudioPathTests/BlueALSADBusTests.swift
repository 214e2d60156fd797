import AudioPath
@testable import BlueZ
import Foundation
import TestSupport
import Testing

/// BlueALSA on a real private bus: python-dbusmock with our `org.bluealsa` template
/// (Tests/FakeBlueZ/bluealsa_mock.py, started by TestSupport's `MockBlueALSA`), read through
/// `BlueALSADBusPCMSource`.
@Suite("BlueALSA over D-Bus", .timeLimit(.minutes(1)))
struct BlueALSADBusTests {
    private let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")

    @Test("a connected speaker becomes ready when BlueALSA adds its A2DP sink PCM, and unready when it is removed")
    func pcmComesAndGoes() async throws {
        let mock = try await MockBlueALSA.start()
        let path = BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
        var availability = path.availability(of: speaker).makeAsyncIterator()
        #expect(await availability.next() == false)

        let speaker = speaker
        let wait = Task { try await path.waitUntilReady(for: speaker) }
        // A headset PCM for the same device is not the audio path for music.
        try await mock.addPCM("11:22:33:AA:BB:CC", type: "sco", mode: "sink", transport: "HFP-AG")
        let pcmPath = try await mock.addSpeakerPCM("11:22:33:aa:bb:cc")
        let pcm = try await wait.value
        #expect(pcm.path == pcmPath.rawValue)
        #expect(pcm.device == "/org/bluez/hci0/dev_11_22_33_AA_BB_CC")
        #expect(pcm.transport == "A2DP-source" && pcm.mode == "sink" && pcm.running == false)
        #expect(await availability.next() == true)

        try await mock.removePCM(pcmPath)
        #expect(await availability.next() == false)
        await mock.stop()
    }

    @Test("a PCM that already exists is found through GetManagedObjects")
    func existingPCMIsFound() async throws {
        let mock = try await MockBlueALSA.start()
        _ = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        let pcm = try await BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
            .waitUntilReady(for: speaker, timeout: .seconds(10))
        #expect(pcm.address == speaker)
        await mock.stop()
    }

    @Test("BlueALSA going away reads as no PCM")
    func serviceGoneMeansUnready() async throws {
        let mock = try await MockBlueALSA.start()
        _ = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        var availability = BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
            .availability(of: speaker).makeAsyncIterator()
        #expect(await availability.next() == true)
        await mock.terminateMock()
        #expect(await availability.next() == false)
        await mock.stop()
    }
}
