import AsyncSignals
import AudioPath
import BlueZ
import DBus
import Glibc
import Logging
import Logind
import PlaybackService
import Readiness
import SpeakerdAPI
import Systemd
import Configuration

/// speakerd's shell: runs start-up, serves `SpeakerdControl`, and runs ``DaemonCore``.
///
/// The core decides: the daemon's lifecycle, what each event does to the compatibility gate and
/// who hears it, what a change of the link means, and readiness (``ReadinessTracking``: what it
/// observes, ``ReadinessInputs``, the verdict, and what follows from each change: the readiness
/// gate moved to the verdict's level, the player told, the status published). Nothing else sets a
/// readiness level, so no event order can leave a level that no later event lifts. `run(_:)`
/// feeds it and carries out its effects. Beside it the shell holds what it runs with and never
/// changes (``DaemonEnvironment``: the configuration, the dependencies, the logger and the
/// clock), the gate, the player, and ``StartupRuns`` (what start-up did, the run in progress, the
/// run again after the gate reopened).
///
/// Everything else has an owner of its own that reports here:
/// - ``SpeakerLink``: the target speaker and its link, reconnects (`linkChanged`);
/// - the features (``DaemonFeatures``, one `ServiceGroup`, with the operation queue their
///   speaker operations share), through one ``FeatureInbox`` (`receive`): the bus and what is
///   published on it (``BusFeature``), the state file (``StateFileFeature``), the BlueZ watch
///   (``BlueZWatch``: the client, the adapter in use, BlueZ's events), the player's changes and
///   what it last said (``PlaybackWatch``), sleep and the lock (``SleepFeature``), the audio path
///   and the numbering of its follows (``AudioPathFeature``; the player gets each ready route
///   from it), the speaker's care (``SpeakerCareFeature``: profile nudge, volume) and scanning
///   (``ScanFeature``);
/// - the start-up sequencer, whose steps are this actor's methods (`+Startup`).
public actor SpeakerdDaemon {
    typealias Lifecycle = DaemonCore.Lifecycle

    /// The daemon's own decisions and readiness (see ``DaemonCore``).
    var core: DaemonCore
    var lifecycle: Lifecycle { core.lifecycle }
    nonisolated let environment: DaemonEnvironment
    public nonisolated let gate: ReadinessGate<DaemonReadiness>
    public nonisolated let link: SpeakerLink

    /// Plays songs; nil when this daemon has no playback engine.
    let playback: (any DaemonPlayback)?
    /// The features (the bus and publishing, the state file, the BlueZ watch, the player's
    /// changes, sleep, the audio path, the speaker's care, scanning), each owning its state and
    /// reporting here through one inbox (`receive`, in `+Features`).
    let features: DaemonFeatures

    /// What readiness is computed from, the verdict, and what follows from their changes.
    var tracking: ReadinessTracking { core.tracking }
    var inputs: ReadinessInputs { core.inputs }
    var verdict: ReadinessInputs.Verdict { core.verdict }
    /// The links counted as each came up, and the user's choices (see ``LinkHistory``).
    var linkHistory: LinkHistory { core.linkHistory }

    /// Start-up's runs: their record, the run in progress, the run again (see ``StartupRuns``).
    var startup = StartupRuns()

    public init(configuration: DaemonConfiguration, dependencies: DaemonDependencies,
                notifier: SystemdNotifier?, logger: Logger) {
        let erasedClock = ErasedClock(dependencies.clock)
        environment = DaemonEnvironment(configuration: configuration, dependencies: dependencies, logger: logger,
                                        clock: erasedClock)
        self.gate = ReadinessGate(initial: .started, clock: dependencies.clock, logger: logger)
        let operations = AsyncOperationQueue(name: "speaker", maxConcurrentOperations: 2, defaultTimeout: .seconds(10),
                                              clock: dependencies.clock, logger: logger)
        self.link = SpeakerLink(clock: dependencies.clock, reconnectCap: configuration.reconnectMax,
                                operations: operations, logger: logger)
        let playback: (any DaemonPlayback)?
        if let given = dependencies.playback {
            playback = given
        } else if let makePlayback = dependencies.makePlayback {
            playback = makePlayback(PlaybackWiring(gate: gate, clock: dependencies.clock, audio: dependencies.audio))
        } else {
            playback = nil
        }
        self.playback = playback
        let audio = dependencies.audio
        features = DaemonFeatures(
            operations: operations,
            bus: { BusFeature(notifier: notifier, inbox: $0, logger: logger) },
            stateFile: { StateFileFeature(directory: configuration.stateDirectory, inbox: $0, clock: erasedClock, logger: logger) },
            sleep: { SleepFeature(operations: operations, inbox: $0, logger: logger) },
            audioPath: { inbox in playback.map { AudioPathFeature(backend: audio, playback: $0, inbox: inbox) } },
            speakerCare: {
                SpeakerCareFeature(backend: audio, hasPlayback: playback != nil, stateFile: $1, operations: operations,
                                   grace: configuration.audioDeviceGrace, firstVolume: configuration.firstVolume,
                                   clock: erasedClock, inbox: $0, logger: logger)
            },
            scan: { ScanFeature(scanDuration: configuration.scanDuration, operations: operations, stateFile: $0, clock: erasedClock) },
            logger: logger)
        core = DaemonCore(tracking: ReadinessTracking(inputs: ReadinessInputs(soundfont: playback == nil ? .noEngine : .notLoaded(path: configuration.soundfont))),
                          configuredAdapter: configuration.adapter)
    }

    /// Runs start-up; returns once it finished (the daemon then keeps running on events).
    public func start() async {
        guard lifecycle == .idle else { return }
        await run(.start)
        let outcome = await stateStore.load(now: dependencies.now())
        logger.info("state: \(outcome)")
        features.inbox.connect { [weak self] report in await self?.receive(report) }
        await features.sleep.begin()
        features.start()
        await link.follow { [weak self] snapshot in await self?.linkChanged(snapshot) }
        await playback?.readinessChanged(verdict.waitingFor.map(PlaybackWait.init))
        await watchPlayback()
        // Started by bus activation: a request is already waiting for us (see `BusActivation`).
        if configuration.launchedByRequest {
            logger.info("started by D-Bus activation: a request is waiting on bus \(configuration.bus)")
        }
        await runStartup(requestWaiting: configuration.launchedByRequest)
    }

    /// A daemon let go of without `shutdown()` (a test's world left to its deinit) still stops
    /// its features: a state-write retry, say, holds the daemon only weakly but sleeps on the
    /// injected clock, and on a test clock nobody moves again it never ended (LeakSanitizer, in CI).
    deinit { features.cancel() }

    // What the environment holds, by the names the reducer's files use.
    public nonisolated var configuration: DaemonConfiguration { environment.configuration }
    nonisolated var dependencies: DaemonDependencies { environment.dependencies }
    nonisolated var logger: Logger { environment.logger }
    nonisolated var clock: ErasedClock { environment.clock }
    /// Every speaker operation (connect, disconnect, discovery…) runs here: one at a time per
    /// kind, timed out, and holding the sleep delay lock while any runs (the features own it).
    nonisolated var operations: AsyncOperationQueue { features.operations }

    /// The known speakers' store (the state file feature owns it).
    nonisolated var stateStore: StateStore { features.stateFile.store }

    /// Shutting down or shut down: nothing new (a timer, a retry, a follower) may start then, since
    /// `shutdown()` has already cancelled what it found and would never see it.
    var isWindingDown: Bool { core.isWindingDown }

    /// A stop was asked for (SIGTERM, SIGINT): readiness changes from here on are not logged, so
    /// "stopping: … received" stays the last line about it. The wind-down itself is `shutdown()`,
    /// which the service group reaches after the services started later have stopped.
    public func stopRequested() async {
        await run(.stopRequested)
    }

    /// Winds down: stops discovery and playback, cancels timers, says STOPPING=1.
    public func shutdown() async {
        guard lifecycle != .stopped else { return }
        await run(.windingDown)
        await features.bus.stopping(status: phase.statusLine)
        // Every follower task is cancelled and dropped, so nothing started for this daemon
        // outlives it (each holds the daemon only weakly, but its stream and buffers are ours).
        startup.stop()
        // The features wind down in the reverse of their order (see `DaemonFeatures`): the
        // speaker's care and the audio path stop their timers and followers, the sleep lock is
        // released, the state file's retry stops.
        await features.shutDown()
        // A polite block (the soundfont preload) captures the daemon; dropped, so a gate
        // pausing between blocks does not keep it.
        gate.cancelPoliteBlocks()
        await link.shutdown()
        await operations.shutDown()
        await playback?.stop()
        // The daemon made the BlueZ client, so it ends it (the BlueZ watch keeps it).
        await features.bluez.close()
        // The bus last: the API answers (and says "stopping") until everything else has stopped.
        await features.bus.close()
        await run(.stopped)
    }

    /// Why the daemon cannot serve at all (its bus could not be reached), if so: then it should
    /// exit and let systemd restart it, rather than run without an API.
    public var fatalProblem: String? {
        get async { await fatalProblemNow() }
    }

    private func fatalProblemNow() async -> String? {
        guard dependencies.connectBus != nil, await features.bus.connection == nil,
              let entry = startup.record.last?.entry(StartupScenarios.Step.bus), entry.outcome != .ok else { return nil }
        return "cannot serve the API: \(entry.outcome)"
    }

    /// Proves to the watchdog that this actor is not stalled.
    public func heartbeat() {}

    /// The last start-up's timeline, if one ran.
    public var startupTimeline: StartupTimeline? { startup.record.last }


    /// The verdict readiness is at now (level and reason), for tests and diagnostics.
    public var readiness: ReadinessInputs.Verdict { verdict }

    // MARK: - Derived readiness

    /// Takes in what the daemon observes now, then carries out what follows from it
    /// (``ReadinessTracking``): the gate's level, the reason (logged once per change), songs
    /// that can no longer wait, the status.
    func update(_ input: ReadinessTracking.Input) async {
        await run(.observed(input))
    }

    /// Steps the core and carries out its effects, in order.
    func run(_ event: DaemonCore.Event) async {
        for effect in core.step(event) {
            await perform(effect)
        }
    }

    private func perform(_ effect: DaemonCore.Effect) async {
        switch effect {
        case .readiness(.moveGate(let level)):
            if level > gate.level { gate.raise(to: level) } else if level < gate.level { gate.drop(to: level) }
        case .readiness(.tellPlayer(let waiting)):
            await playback?.readinessChanged(waiting.map(PlaybackWait.init))
        case .readiness(.publishStatus), .publish:
            await publish()
        case let .readiness(.log(level, line)), let .log(level, line):
            logger.log(level: level, "\(line)")
        case .forgetAdapter:
            features.bluez.adapterGone()
        case .detachBlueZ:
            await link.attach(nil)
        case let .observeLink(event):
            await link.observe(event, known: await stateStore.knownSpeakers)
        case let .announceCandidates(event):
            if let bluez = features.bluez.client, let connection = await features.bus.connection {
                await features.scan.announceCandidates(after: event, from: bluez, on: connection)
            }
        case let .runStartupAgain(reason):
            // Its steps wait on BlueZ, whose events must keep flowing meanwhile (a speaker
            // connecting, bluetoothd leaving again).
            startup.runAgain { Task { [weak self] in await self?.runStartup(reason: reason) } }
        case let .followAudioPath(target):
            await followAudioPath(to: target, waitForFirst: false)
        case .observeSpeaker:
            await observeSpeaker()
        case let .remember(target, link):
            let isNew = await features.stateFile.recordConnection(to: target.address, name: target.name, at: dependencies.now())
            let volume = await features.stateFile.knownSpeakers.first { $0.address == target.address }?.volume
            await features.speakerCare.remembered(target.address, isNew: isNew, volume: volume, onLink: link)
            await publish()
        case let .linkSleep(starting):
            await link.systemSleep(starting: starting)
        case .reportBusLost:
            features.bus.lost.succeed(configuration.bus)
        case let .heardPlayback(snapshot):
            features.playbackChanges.heard(snapshot)
        }
    }
}
