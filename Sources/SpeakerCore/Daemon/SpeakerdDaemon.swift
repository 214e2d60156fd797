import Glibc
import Logging

/// The daemon's coordinator: owns the readiness gate, the BlueZ client, the target speaker,
/// the reconnect controller and the published status; implements `SpeakerdControl`.
///
/// This is the one large type of speakerd; its parts live in extensions by concern:
/// start-up (`+Startup`), BlueZ events (`+Events`), the API (`+Control`).
public actor SpeakerdDaemon {
    enum Lifecycle: Equatable {
        case idle
        case starting
        /// Start-up finished (or is waiting for the user's pick).
        case running
        /// The compatibility gate closed; waiting for the condition to clear.
        case blocked(CompatibilityProblem)
        case stopping
        case stopped
    }

    var lifecycle: Lifecycle = .idle
    public nonisolated let configuration: DaemonConfiguration
    let dependencies: DaemonDependencies
    let logger: Logger
    let notifier: SystemdNotifier?
    public nonisolated let gate: ReadinessGate<DaemonReadiness>
    let stateStore: StateStore
    let clock: ErasedClock

    var connection: DBusConnection? {
        didSet { connectionSlot.value = connection }
    }
    /// The bus and the status line as the playback side reads them (outside this actor).
    let connectionSlot = LockedSlot<DBusConnection?>(nil)
    let phaseSlot = LockedSlot(DaemonPhase.starting.statusLine)
    /// Plays songs; nil when this daemon has no playback engine.
    let playback: (any DaemonPlayback)?
    var apiObject: DBusObject?
    var bluez: (any BlueZClient)?
    var adapter: Adapter?
    /// The speaker speakerd keeps connected.
    var target: (address: BluetoothAddress, name: String)?
    var phase: DaemonPhase = .starting {
        didSet { phaseSlot.value = phase.statusLine }
    }
    var lastTimeline: StartupTimeline?
    /// The start-up run in progress, so the bus step can switch it to "launched by request".
    var startupRun: (sequencer: StartupSequencer, operations: [String: StartupOperation.Body], knownSpeakers: Bool)?
    var lastScan: [RankedCandidate] = []
    var reconnect: ReconnectController<ErasedClock>?
    var eventTask: Task<Void, Never>?
    var reconnectWatcher: Task<Void, Never>?
    var sleepTask: Task<Void, Never>?
    var playbackWatcher: Task<Void, Never>?
    /// Follows our own bus connection (see `+Bus`).
    var busWatcher: Task<Void, Never>?
    /// Resolved with the bus when our connection to it is lost (not when we close it).
    nonisolated let lostBus = OneShotSignal<BusSelection, Never>()
    /// logind's sleep delay lock while connects and scans run (see `+Inhibitor`).
    var sleepInhibitor: SleepInhibitor?
    var inhibitorTask: Task<Void, Never>?
    var speakerWorkInFlight = 0
    var readySent = false
    var lastPublished: StatusReport?

    public init(configuration: DaemonConfiguration, dependencies: DaemonDependencies,
                notifier: SystemdNotifier?, logger: Logger) {
        self.configuration = configuration
        self.dependencies = dependencies
        self.notifier = notifier
        self.logger = logger
        self.clock = ErasedClock(dependencies.clock)
        self.gate = ReadinessGate(initial: .started, clock: dependencies.clock, logger: logger)
        self.stateStore = StateStore(directory: configuration.stateDirectory, logger: logger)
        if let playback = dependencies.playback {
            self.playback = playback
        } else if let makePlayback = dependencies.makePlayback {
            let bus = connectionSlot, line = phaseSlot
            self.playback = makePlayback(PlaybackWiring(
                gate: gate, clock: dependencies.clock, bus: { bus.value },
                waitingFor: { line.value.prefix(1).lowercased() + line.value.dropFirst() }))
        } else {
            self.playback = nil
        }
    }

    /// Runs start-up; returns once it finished (the daemon then keeps running on events).
    public func start() async {
        guard lifecycle == .idle else { return }
        lifecycle = .starting
        let outcome = await stateStore.load(now: dependencies.now())
        logger.info("state: \(outcome)")
        await watchPlayback()
        // Started by bus activation: a request is already waiting for us (see `BusActivation`).
        if configuration.launchedByRequest {
            logger.info("started by D-Bus activation: a request is waiting on bus \(configuration.bus)")
        }
        await runStartup(requestWaiting: configuration.launchedByRequest)
    }

    /// Winds down: stops discovery and playback, cancels timers, says STOPPING=1.
    public func shutdown() async {
        guard lifecycle != .stopped else { return }
        lifecycle = .stopping
        phase = .stopping
        notify([.stopping, .status(phase.statusLine)])
        // Every follower task is cancelled and dropped, so nothing started for this daemon
        // outlives it (each holds the daemon only weakly, but its stream and buffers are ours).
        for task in [eventTask, reconnectWatcher, sleepTask, playbackWatcher, busWatcher] { task?.cancel() }
        (eventTask, reconnectWatcher, sleepTask, playbackWatcher, busWatcher) = (nil, nil, nil, nil, nil)
        await reconnect?.shutdown()
        reconnect = nil
        await stopSleepInhibitor()
        await playback?.stop()
        if let bluez, let adapter, adapter.discovering, let address = adapter.address {
            try? await bluez.stopDiscovery(on: address)
        }
        // The daemon made the BlueZ client, so it ends it: its signal pump and RSSI coalescer
        // would otherwise wait on their streams (and keep the client) for ever.
        if let client = bluez as? DBusBlueZClient { await client.shutDown() }
        if let connection {
            connection.unexport(at: SpeakerdBus.path)
            _ = try? await connection.releaseName(SpeakerdBus.name)
            connection.close()
        }
        apiObject = nil
        lifecycle = .stopped
    }

    /// Why the daemon cannot serve at all (its bus could not be reached), if so: then it should
    /// exit and let systemd restart it, rather than run without an API.
    public var fatalProblem: String? {
        guard dependencies.connectBus != nil, connection == nil,
              let entry = lastTimeline?.entry(StartupScenarios.Step.bus), entry.outcome != .ok else { return nil }
        return "cannot serve the API: \(entry.outcome)"
    }

    /// Proves to the watchdog that this actor is not stalled.
    public func heartbeat() {}

    /// The last start-up's timeline, if one ran.
    public var startupTimeline: StartupTimeline? { lastTimeline }

    // MARK: - Status publishing

    func setPhase(_ new: DaemonPhase) async {
        phase = new
        await publish()
    }

    func currentStatus() async -> StatusReport {
        let playback = await playback?.snapshot() ?? .idle
        let speaker = target.map {
            StatusReport.Speaker(address: $0.address.description, name: $0.name,
                                 connected: gate.isReached(.speakerConnected))
        }
        return StatusReport(readiness: gate.level.description, message: phase.statusLine,
                            speaker: speaker, playback: playback)
    }

    /// Tells systemd and the bus what changed (only what changed).
    func publish() async {
        let status = await currentStatus()
        let previous = lastPublished
        lastPublished = status
        if previous?.message != status.message { notify([.status(status.message)]) }
        guard let apiObject, let connection else { return }
        let records = SpeakerdDBusRecords.self
        let interface = SpeakerdBus.interface
        try? apiObject.setProperty("Status", of: interface, to: .string(status.message))
        if previous?.readiness != status.readiness {
            try? apiObject.setProperty("Readiness", of: interface, to: .string(status.readiness))
            try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "ReadinessChanged",
                                       arguments: [.string(status.readiness)])
        }
        if previous?.speaker != status.speaker {
            let value = status.speaker.map(records.encode) ?? .properties([:])
            try? apiObject.setProperty("Speaker", of: interface, to: value)
            try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "SpeakerChanged", arguments: [value])
        }
        if previous?.playback != status.playback {
            let value = records.encode(status.playback)
            try? apiObject.setProperty("Playback", of: interface, to: value)
            try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "PlaybackChanged", arguments: [value])
        }
    }

    func notify(_ messages: [NotifyMessage]) {
        guard let notifier else { return }
        do { try notifier.send(messages) } catch { logger.warning("\(error.description)") }
    }

    func raise(_ level: DaemonReadiness) async {
        if gate.raise(to: level) { await publish() }
    }

    func drop(_ level: DaemonReadiness) async {
        if gate.drop(to: level) { await publish() }
    }
}
