import AudioPath
import AsyncSignals
@testable import BlueZ
import Foundation
@testable import Daemon
import TestSupport
import Testing

/// BlueZ says `Connected` when the baseband link is up and `ServicesResolved` once the profiles
/// are there: a speaker whose services are still being resolved cannot carry audio yet. Where
/// BlueZ gives the property (once it has shown it true for this speaker), readiness waits for it.
@Suite("ServicesResolved, where BlueZ gives it")
struct ServicesResolvedTests {
    static let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")

    @Test("the verdict: connected with services unresolved waits, saying so; unknown or resolved is ready")
    func verdict() {
        var inputs = ReadinessInputs(soundfont: .loaded)
        inputs.bus = true
        inputs.bluetooth = .ready
        inputs.audioPath = .ready(.standIn("test"))
        inputs.link = LinkSnapshot(target: .init(address: Self.speaker, name: "JBL Flip 5", why: .lastKnown),
                                   connected: true, servicesResolved: nil)
        #expect(inputs.verdict.level == .playbackReady, "BlueZ has not said: the link counts")
        inputs.link.servicesResolved = false
        #expect(inputs.verdict.level == .adapter)
        #expect(inputs.verdict.waitingFor?.message == "connecting to JBL Flip 5… (its services are being resolved)")
        inputs.link.servicesResolved = true
        #expect(inputs.verdict.level == .playbackReady)
    }

    @Test("""
        connected with services unresolved, but the speaker's own audio device is there (its BlueALSA PCM): ready, \
        as real bluetoothd can leave ServicesResolved false on a link that came back at once; another speaker's \
        device does not count
        """)
    func speakersOwnDeviceCounts() throws {
        var inputs = ReadinessInputs(soundfont: .loaded)
        inputs.bus = true
        inputs.bluetooth = .ready
        inputs.link = LinkSnapshot(target: .init(address: Self.speaker, name: "JBL Flip 5", why: .userPick),
                                   connected: true, servicesResolved: false)
        let pcm = "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink"
        inputs.audioPath = .ready(AudioRoute(by: BlueALSABackend.self, device: pcm, speaker: Self.speaker, description: "BlueALSA PCM \(pcm)"))
        #expect(inputs.verdict.level == .playbackReady)
        let other = try BluetoothAddress("11:22:33:AA:BB:DD")
        inputs.audioPath = .ready(AudioRoute(by: BlueALSABackend.self, device: pcm, speaker: other, description: "BlueALSA PCM \(pcm)"))
        #expect(inputs.verdict.level == .adapter)
        #expect(inputs.verdict.waitingFor?.message == "connecting to JBL Flip 5… (its services are being resolved)")
        inputs.audioPath = .notReady(.noAudioDevice("JBL Flip 5", "BlueALSA has no A2DP playback PCM for it yet"))
        #expect(inputs.verdict.level == .adapter)
        inputs.link.connected = false
        inputs.audioPath = .ready(AudioRoute(by: BlueALSABackend.self, device: pcm, speaker: Self.speaker, description: "BlueALSA PCM \(pcm)"))
        #expect(inputs.verdict.level == .adapter, "a device left over from a link that is gone proves nothing")
    }

    @Test("after a reconnect, readiness waits until BlueZ has resolved the speaker's services again")
    func reconnectWaitsForServices() async throws {
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: Self.speaker, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, trusted: true)])
        // On a test clock: start-up's step timeouts and the reconnect's backoff move only when
        // the test moves time, however busy the machine is.
        let world = try await InProcessDaemon.start(on: bluez)
        let (daemon, startup) = (world.daemon, world.startup)
        #expect(daemon.gate.isReached(.playbackReady), "ready on the first connection (BlueZ has not shown the property yet)")
        await bluez.updateDevice(Self.speaker) { $0.servicesResolved = true }
        try await eventually("the link follows ServicesResolved from now on") {
            await daemon.link.snapshot.servicesResolved == true
        }

        await bluez.dropConnection(Self.speaker, reason: .timeout)
        try await eventually("the loss is seen") { !daemon.gate.isReached(.speakerConnected) }
        // The speaker comes back: connected first, services resolved a moment later.
        await bluez.updateDevice(Self.speaker) { $0.connected = true; $0.servicesResolved = false }
        try await eventually("connected, services still being resolved") {
            let verdict = await daemon.readiness
            return await daemon.link.snapshot.connected && verdict.waitingFor?.message.contains("services are being resolved") == true
        }
        #expect(!daemon.gate.isReached(.playbackReady))
        await bluez.updateDevice(Self.speaker) { $0.servicesResolved = true }
        try await eventually("playback ready once they are") { daemon.gate.isReached(.playbackReady) }
        await daemon.shutdown()
        startup.cancel()
    }
}
