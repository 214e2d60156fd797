import AudioPath
import DBus
import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import PlaybackService
@testable import Daemon
import Synchronization
import TestSupport
import Testing
import SpeakerdAPI
@testable import Configuration

/// "Connected, but no sound device": after a grace period speakerd asks BlueZ once per link for
/// the speaker's A2DP profile, and says so; it never disconnects and never loops.
@Suite("A connected speaker without an audio device gets one ConnectProfile")
struct ProfileNudgeTests {
    /// A playback side whose audio path the test sets (a sound server's sink appearing or not).
    final class SteerablePlayback: StandInPlayback, StandInAudio, Sendable {
        private let outputs = Mutex<[AsyncStream<AudioPathReport>.Continuation]>([])
        private let current = Mutex<ReadinessInputs.AudioPath>(.notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))

        func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
            let (stream, continuation) = AsyncStream.makeStream(of: AudioPathReport.self)
            outputs.withLock { $0.append(continuation) }
            continuation.yield(AudioPathReport(current.withLock { $0 }, warnings: warnings.withLock { $0 }))
            return stream
        }

        func set(_ state: ReadinessInputs.AudioPath) {
            current.withLock { $0 = state }
            let report = AudioPathReport(state, warnings: warnings.withLock { $0 })
            for output in outputs.withLock({ $0 }) { output.yield(report) }
        }

        /// What the audio path says it did to the speaker's cards (a headset card switched),
        /// reported with each state.
        let warnings = Mutex<[String]>([])
    }

    /// The real daemon on the in-process fake BlueZ, where `speaker` is known, paired and in reach,
    /// with `playback` as its playback side and `state` as its state directory (which must outlive
    /// it); start it with `start()`.
    static func daemon(knowing speaker: DaemonWorld.Speaker, playback: SteerablePlayback, clock: any Clock<Duration>,
                       state: TemporaryDirectory) throws -> (SpeakerdDaemon, FakeBlueZClient, BluetoothAddress) {
        let address = try BluetoothAddress(speaker.address)
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: address, name: speaker.name, deviceClass: 0x240414, paired: true, trusted: true)])
        DaemonWorld.remember([speaker], in: state)
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: playback, audio: playback),
            notifier: nil, logger: Logger(label: "test.speakerd"))
        return (daemon, bluez, address)
    }

    @Test("no audio device 4 s after connecting: one ConnectProfile(A2DP) per link, reported in status; the device appearing makes it ready")
    func oneConnectProfilePerLink() async throws {
        let clock = TestClock<Duration>()
        let playback = SteerablePlayback()
        let state = TemporaryDirectory()
        let (daemon, bluez, speaker) = try Self.daemon(knowing: DaemonWorld.flip, playback: playback, clock: clock, state: state)
        let startup = Task { await daemon.start() }
        func profileCalls() async -> Int { await bluez.calls.filter { $0 == .connectProfile(speaker, BlueZUUID.a2dpSink) }.count }

        _ = try await clock.advance(atMost: .seconds(30), until: "connected, waiting for its audio device") {
            await daemon.link.snapshot.connected
        }
        #expect(!daemon.gate.isReached(.playbackReady))
        await clock.advance(by: .seconds(3))
        for _ in 0..<50 { await Task.yield() }
        #expect(await profileCalls() == 0, "asked before the grace period was over")

        _ = try await clock.advance(atMost: .seconds(5), until: "speakerd asks for the A2DP profile") { await profileCalls() == 1 }
        try await eventually("status says what was asked") {
            try await daemon.status().warnings.contains { $0.contains("JBL Flip 5 had no audio device 4 s after connecting") }
        }
        // Once per link: a minute more without the device asks nothing more, and never disconnects.
        await clock.advance(by: .seconds(60))
        for _ in 0..<50 { await Task.yield() }
        #expect(await profileCalls() == 1)
        #expect(await !bluez.calls.contains(.disconnect(speaker)))

        // The sound server's sink appears: ready to play, on that speaker.
        playback.set(.ready(.standIn("PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")))
        try await eventually("playback ready") { daemon.gate.isReached(.playbackReady) }

        // A new link (the speaker dropped and came back) without a device gets its own one ask.
        playback.set(.notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        await bluez.dropConnection(speaker, reason: .timeout)
        try await eventually("the loss is seen") { await !daemon.link.snapshot.connected }
        await bluez.updateDevice(speaker) { $0.connected = true }
        try await eventually("connected again") { await daemon.link.snapshot.connected }
        _ = try await clock.advance(atMost: .seconds(10), until: "asked once more, for the new link") { await profileCalls() == 2 }
        await clock.advance(by: .seconds(60))
        for _ in 0..<50 { await Task.yield() }
        #expect(await profileCalls() == 2)

        await daemon.shutdown()
        startup.cancel()
    }

    @Test("a headset card the playback side switched to A2DP is in status's warnings while waiting and still once ready to play")
    func headsetSwitchStaysInStatus() async throws {
        let playback = SteerablePlayback()
        let switched = "its card bluez_card.11_22_33_AA_BB_CC was in the headset profile headset_head_unit; speakerd switched it to a2dp_sink once"
        playback.set(.notReady(.noAudioDevice("JBL Flip 5", switched)))
        playback.warnings.withLock { $0 = ["JBL Flip 5: " + switched] }
        let state = TemporaryDirectory()
        let (daemon, _, _) = try Self.daemon(knowing: DaemonWorld.flip, playback: playback, clock: ContinuousClock(), state: state)
        let startup = Task { await daemon.start() }

        try await eventually("connected, waiting for its audio device") {
            try await daemon.status().waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue
        }
        let waiting = try await daemon.status()
        #expect(waiting.waitingFor?.message.contains(switched) == true, "\(String(describing: waiting.waitingFor))")
        #expect(waiting.warnings.contains("JBL Flip 5: " + switched), "\(waiting.warnings)")

        playback.set(.ready(.standIn("PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")))
        try await eventually("playback ready") { daemon.gate.isReached(.playbackReady) }
        let ready = try await daemon.status()
        #expect(ready.waitingFor == nil)
        #expect(ready.warnings.filter { $0.contains("headset profile") } == ["JBL Flip 5: " + switched],
                "once ready, status no longer says the card was switched (or says it twice): \(ready.warnings)")
        #expect(ready.humanReadable.contains("Warning:   JBL Flip 5: its card bluez_card.11_22_33_AA_BB_CC was in the headset profile"))

        await daemon.shutdown()
        startup.cancel()
    }
}
