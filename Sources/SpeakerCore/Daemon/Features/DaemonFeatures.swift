import Logging
import Readiness
import ServiceLifecycle
import Synchronization

/// A feature of the daemon: an actor (or, where the reducer reads its state at once, a class
/// behind a lock) that runs as a `Service` until the daemon winds down, then stops its own timers
/// and followers (`stop`), so nothing it started outlives the daemon.
protocol DaemonFeature: Service, AnyObject {
    func stop() async
}

extension DaemonFeature {
    func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }
}

/// The daemon's features, each a `Service` that owns its state and reports into the reducer
/// through one ``FeatureInbox``, run as one `ServiceGroup` in dependency order.
///
/// The group's order is the start and stop order: the bus first (everything is published
/// there; its connection is closed only after the group, by the daemon's last step), the state
/// file (the others write to it), the BlueZ watch and the player's changes, sleep and the lock,
/// the audio path, the speaker's care (which reads the state file and the path's routes),
/// and scanning (which ranks by the known speakers). Winding down runs
/// it in reverse, each feature stopping its own timers and followers, so no hand-written list
/// of tasks to cancel exists.
final class DaemonFeatures: Sendable {
    let inbox = FeatureInbox()
    /// The queue every speaker operation runs on (connect, disconnect, discovery, a profile's
    /// connect): the link's, start-up's and the features' alike, so that they take turns per kind
    /// and the sleep delay lock is held while any runs.
    let operations: AsyncOperationQueue
    let bus: BusFeature
    /// The BlueZ client, the adapter in use and BlueZ's events.
    let bluez: BlueZWatch
    /// The player's changes, and what it last said it is doing.
    let playbackChanges: PlaybackWatch
    let stateFile: StateFileFeature
    let sleep: SleepFeature
    /// Nil when the daemon has no playback: there is no path to follow then.
    let audioPath: AudioPathFeature?
    let speakerCare: SpeakerCareFeature
    let scan: ScanFeature
    private let group: ServiceGroup
    private let running = Mutex<Task<Void, Never>?>(nil)

    init(operations: AsyncOperationQueue,
         bus: (FeatureInbox) -> BusFeature,
         stateFile: (FeatureInbox) -> StateFileFeature,
         sleep: (FeatureInbox) -> SleepFeature,
         audioPath: (FeatureInbox) -> AudioPathFeature?,
         speakerCare: (FeatureInbox, StateFileFeature) -> SpeakerCareFeature,
         scan: (StateFileFeature) -> ScanFeature,
         logger: Logger) {
        self.operations = operations
        self.bus = bus(inbox)
        bluez = BlueZWatch(inbox: inbox)
        playbackChanges = PlaybackWatch(inbox: inbox)
        self.stateFile = stateFile(inbox)
        self.sleep = sleep(inbox)
        self.audioPath = audioPath(inbox)
        self.speakerCare = speakerCare(inbox, self.stateFile)
        self.scan = scan(self.stateFile)
        let services: [any Service] = [self.bus, self.stateFile, bluez, playbackChanges, self.sleep] + [self.audioPath].compactMap { $0 }
            + [self.speakerCare, self.scan]
        group = ServiceGroup(configuration: .init(services: services, logger: logger))
    }

    /// Starts the group (once); the features run until `shutDown` or `cancel`.
    func start() {
        running.withLock { task in
            guard task == nil else { return }
            let group = group
            // Detached: the group's graceful shutdown is the daemon's own, not the caller's.
            task = Task.detached { try? await group.run() }
        }
    }

    /// Winds the features down in reverse order and waits until the last has stopped.
    func shutDown() async {
        await group.triggerGracefulShutdown()
        let task = running.withLock { $0 }
        await task?.value
    }

    /// Stops everything at once, without waiting (a daemon let go of without `shutdown()`).
    func cancel() {
        running.withLock { $0?.cancel() }
    }
}
