import AudioPath
import DBus
import AsyncSignals
@testable import BlueZ
@testable import DBus
import Logging
@testable import PlaybackService
@testable import Daemon
import TestSupport
import Synchronization
import Testing
import SpeakerdAPI
@testable import Configuration

/// A playback side whose audio path is only "there" once the test says so, so a test can make
/// something happen while start-up's last step (`playbackReady`) is still waiting on it.
private final class HeldAudioPath: StandInPlayback, StandInAudio {
    let held: HeldGate
    /// Every reason the daemon gave the player, in order.
    let heard = Mutex<[String]>([])

    func readinessChanged(_ waiting: PlaybackWait?) async {
        if let waiting { heard.withLock { $0.append(waiting.message) } }
    }

    init(held: HeldGate) { self.held = held }

    func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        AsyncStream { continuation in
            let held = held
            Task {
                await held.wait()
                continuation.yield(AudioPathReport(.ready(.standIn("the held output"))))
                continuation.finish()
            }
        }
    }
}

extension DaemonIntegrationTests {
    @Test("bluetoothd leaving while start-up's last step runs leaves the daemon waiting for it, not claiming playback-ready")
    func bluetoothdLeavesDuringLastStartupStep() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        let world = fake.world, state = fake.state
        let held = HeldGate()
        defer { held.open() }
        let playback = HeldAudioPath(held: held)
        let logger = Logger(label: "test.speakerd")
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(scanDuration: .seconds(1), stateDirectory: state.path, bus: .address(world.address)),
            dependencies: DaemonDependencies(
                connectBus: { _ in try await DBusConnection.connect(world.bus) },
                makeBlueZ: { connection in try await DBusBlueZClient.start(connection: connection!, logger: logger) },
                playback: playback, audio: playback),
            notifier: nil, logger: logger)
        let starting = Task { await daemon.start() }
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        for _ in 0..<500 where held.waiting == 0 { try await Task.sleep(for: .milliseconds(10)) }  // bounded
        try #require(held.waiting >= 1, "start-up never reached the audio path check")

        playback.heard.withLock { $0.removeAll() }
        try await world.stopBlueZ()
        for _ in 0..<500 where await daemon.lifecycle != .blocked(.noBlueZ) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(await daemon.lifecycle == .blocked(.noBlueZ), "the daemon never saw bluetoothd leave")
        held.open()
        await starting.value

        #expect(daemon.gate.level < .speakerConnected, "readiness jumped back up with no BlueZ behind it")
        #expect(await daemon.lifecycle == .blocked(.noBlueZ))
        let outcome = await daemon.startupTimeline?.entry(StartupScenarios.Step.playbackReady)?.outcome
        #expect(outcome == .failed(NotReadyReason.blocked(.noBlueZ).message))
        // Not even for a moment did it blame an adapter: bluetoothd took the adapter with it.
        // (That moment is what the step above once ended in, under AddressSanitizer in CI.) What
        // the player heard before bluetoothd left depends on how far start-up's other steps got
        // (the soundfont's preload may finish after the audio path check began); from then on it
        // heard one reason only.
        let heard = playback.heard.withLock { $0 }
        let noBlueZ = NotReadyReason.blocked(.noBlueZ).message
        #expect(!heard.contains { $0.localizedCaseInsensitiveContains("adapter") }, "blamed an adapter: \(heard)")
        #expect(Array(heard.drop { $0 != noBlueZ }) == [noBlueZ], "heard after bluetoothd left: \(heard)")
        await daemon.shutdown()
        _ = world
    }
}
