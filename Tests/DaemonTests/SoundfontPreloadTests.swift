@testable import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import Daemon
import SystemPackage
@testable import Systemd
import TestSupport
import Testing
@testable import Configuration

/// The soundfont preload is a polite deferred task: it starts only once start-up has issued its
/// `Connect`, and `playbackReady` waits for it (see `StartupScenarios`).
///
/// Start-up runs on a test clock: its steps' timeouts (5 s for the bus, BlueZ and the adapter)
/// never fire because the machine is busy, only if the test moves time past them. Each
/// scenario moves it at most a few seconds in all, in small steps, until what it waits for.
@Suite("Soundfont preload off the critical path")
struct SoundfontPreloadTests {
    static let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")
    /// The test-clock time each wait may take: well inside every step's timeout.
    static let moveAtMost = Duration.seconds(1)

    /// A playback side whose preload the test holds until it lets it finish, and which records
    /// what BlueZ had been asked when the preload began.
    final class HeldPreload: StandInPlayback {
        let bluez: FakeBlueZClient
        let began = OneShotSignal<[FakeBlueZClient.Call], Never>()
        let release = OneShotSignal<Void, Never>()

        init(bluez: FakeBlueZClient) { self.bluez = bluez }

        func preloadSoundfont(_ path: String) async throws {
            _ = began.succeed(await bluez.calls)
            _ = try await release.result()
        }
    }

    func makeDaemon(bluez: FakeBlueZClient, playback: HeldPreload, state: TemporaryDirectory, clock: TestClock<Duration>,
                    logger: Logger = Logger(label: "test.speakerd")) -> SpeakerdDaemon {
        let configuration = DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path)
        let dependencies = DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: playback)
        return SpeakerdDaemon(configuration: configuration, dependencies: dependencies, notifier: nil, logger: logger)
    }

    /// A first run (one adapter, no speaker known) started, its soundfont preload held; the state
    /// directory lives as long as the caller keeps it.
    func startFirstRun(clock: TestClock<Duration>, logger: Logger = Logger(label: "test.speakerd"))
        throws -> (SpeakerdDaemon, HeldPreload, DoneFlag, TemporaryDirectory) {
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)])
        let playback = HeldPreload(bluez: bluez)
        let state = TemporaryDirectory()
        let daemon = makeDaemon(bluez: bluez, playback: playback, state: state, clock: clock, logger: logger)
        return (daemon, playback, daemon.startInBackground(), state)
    }

    @Test("regular start sends the Connect before the soundfont loads, and is playback-ready only once it is loaded")
    func connectFirstThenPoliteLoad() async throws {
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: Self.speaker, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, trusted: true)])
        let playback = HeldPreload(bluez: bluez)
        let state = TemporaryDirectory()
        state.write("""
            {"version":1,"speakers":[{"address":"\(Self.speaker)","name":"JBL Flip 5",\
            "firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
            """, to: "state.json")
        let clock = TestClock<Duration>()
        let daemon = makeDaemon(bluez: bluez, playback: playback, state: state, clock: clock)
        let started = daemon.startInBackground()

        _ = try await clock.advance(atMost: Self.moveAtMost, until: "the preload begins") { playback.began.result != nil }
        let askedBeforeLoad = try await playback.began.result().get()
        #expect(askedBeforeLoad.contains(.connect(Self.speaker)), "the preload began before the Connect was sent")
        _ = try await clock.advance(atMost: Self.moveAtMost, until: "the speaker is connected") {
            daemon.gate.isReached(.speakerConnected)
        }
        #expect(!daemon.gate.isReached(.playbackReady), "playback ready while the soundfont was still loading")

        _ = playback.release.succeed(())
        _ = try await clock.advance(atMost: Self.moveAtMost, until: "start-up has ended, ready to play") {
            started.isSet && daemon.gate.isReached(.playbackReady)
        }
        let timeline = try #require(await daemon.startupTimeline)
        let bus = try #require(timeline.entry(StartupScenarios.Step.bus))
        let soundfont = try #require(timeline.entry(StartupScenarios.Step.soundfont))
        let ready = try #require(timeline.entry(StartupScenarios.Step.playbackReady))
        #expect(soundfont.outcome == .ok)
        #expect(soundfont.startMs >= bus.endMs)
        #expect(ready.startMs >= soundfont.endMs, "the whole timeline: \(timeline)")
        await daemon.shutdown()
    }

    @Test("a first run with no speaker to connect still preloads the soundfont once READY=1 is out")
    func firstRunPreloadsAfterReady() async throws {
        let clock = TestClock<Duration>()
        let (daemon, playback, started, state) = try startFirstRun(clock: clock)

        _ = try await clock.advance(atMost: Self.moveAtMost, until: "the preload begins") { playback.began.result != nil }
        let askedBeforeLoad = try await playback.began.result().get()
        #expect(!askedBeforeLoad.contains { if case .connect = $0 { true } else { false } })
        #expect(daemon.gate.isReached(.bus))
        _ = playback.release.succeed(())
        _ = try await clock.advance(atMost: Self.moveAtMost, until: "start-up has ended") { started.isSet }
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.scenario == StartupScenarios.Name.firstRun)
        #expect(timeline.entry(StartupScenarios.Step.soundfont)?.outcome == .ok, "the whole timeline: \(timeline)")
        await daemon.shutdown()
        withExtendedLifetime(state) {}
    }

    @Test("a soundfont that takes a while to load is no warning: the preload is judged against its own budget, not 10 ms")
    func aLongLoadIsNotSlow() async throws {
        let lines = Journal()
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { line in lines.withLock { $0.append(line) } } }
        let clock = TestClock<Duration>()
        let (daemon, playback, started, state) = try startFirstRun(clock: clock, logger: logger)
        _ = try await clock.advance(atMost: Self.moveAtMost, until: "the preload begins") { playback.began.result != nil }
        // The load takes 150 ms: fifteen times the quick-block threshold.
        await clock.advance(by: .milliseconds(150))
        _ = playback.release.succeed(())
        _ = try await clock.advance(atMost: Self.moveAtMost, until: "start-up has ended") { started.isSet }
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.entry(StartupScenarios.Step.soundfont)?.outcome == .ok, "the whole timeline: \(timeline)")
        let warnings = lines.withLock { $0 }.filter { $0.hasPrefix("<4>") || $0.contains("slow") }
        #expect(warnings.isEmpty, "\(warnings)")
        await daemon.shutdown()
        withExtendedLifetime(state) {}
    }
}
