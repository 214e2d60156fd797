import BlueZ
import Clocks
@testable import Daemon
@testable import Readiness
import SpeakerdAPI
import TestSupport
import Testing
@testable import Configuration

/// A new speaker that refuses to pair. Real bluetoothd brings up a link to pair over before the
/// keys are exchanged (`Connected` true, `Paired` still false) and drops it when the speaker
/// refuses: seen in the real-Bluetooth guest, speakerd took that link for the speaker connected,
/// said "connected … as you asked" and remembered a speaker it never paired.
@Suite("A speaker that refuses to pair")
struct PairingRefusedTests {
    @Test("""
        connect to a speaker that refuses pairing fails saying pairing failed; the link bluetoothd paired over is \
        not taken for the speaker connected, and nothing is remembered. Once it accepts, connect pairs it, \
        and it is connected and remembered
        """)
    func refusedThenAccepted() async throws {
        let speaker = try BluetoothAddress(DaemonWorld.flip.address)
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: speaker, name: "JBL Flip 5", deviceClass: 0x240414)])
        await bluez.refusePairing(speaker)
        let state = TemporaryDirectory()
        let clock = TestClock<Duration>()
        let journal = Journal()
        let daemon = InProcessDaemon.unstarted(on: bluez, state: state, clock: clock, journal: journal)
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(5), until: "first run's scan has ended, waiting for the user") { started.isSet }

        var refusal: SpeakerdError?
        do { _ = try await daemon.connect(speaker) } catch { refusal = error }
        let message = try #require(refusal, "connect succeeded although the speaker refused to pair").description
        #expect(message.contains("pairing failed"), "\(message)")
        #expect(await bluez.calls.contains(.pair(speaker)))
        let status = try await daemon.status()
        #expect(status.speaker?.connected != true, "\(String(describing: status.speaker))")
        #expect(!daemon.gate.isReached(.speakerConnected))
        #expect(await daemon.stateStore.knownSpeakers.isEmpty, "a speaker that never paired is remembered")
        #expect(journal.containing("connected to JBL Flip 5").isEmpty, "\(journal.all)")

        await bluez.refusePairing(speaker, false)
        let report = try await daemon.connect(speaker)
        #expect(report.speaker == .init(address: speaker.description, name: "JBL Flip 5", connected: true))
        #expect(await daemon.stateStore.knownSpeakers.map(\.address) == [speaker])
        await daemon.shutdown()
    }
}
