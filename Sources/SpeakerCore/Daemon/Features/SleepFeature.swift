import DBus
import Logging
import Logind
import Readiness
import ServiceLifecycle

/// Suspend and resume: logind's `PrepareForSleep` (reported, so the link holds still while the
/// machine sleeps and reconnects shortly after it wakes) and the sleep delay lock held while a
/// speaker operation (connect, scan) is under way, so a suspend does not cut one in half.
///
/// The operation queue's `busy` and `drained` events take and release the lock; they are
/// followed from the start (`begin`), the inhibitor exists from the bus step on (`attach`), and
/// suspend and resume are followed once start-up's graph has run (`followLogind`): those are bus
/// round trips neither READY=1 nor the way to the speaker's `Connect` needs. Where there is no
/// logind (containers, the test bus) the inhibitor says `unavailable` and nothing is delivered.
/// Winding down releases any lock and stops following.
actor SleepFeature: DaemonFeature {
    static let logindName = "org.freedesktop.login1"

    private(set) var inhibitor: SleepInhibitor?
    private var queueEvents: AsyncStream<QueueEvent>?
    private var followers: [Task<Void, Never>] = []
    private var followingLogind = false
    private var stopped = false
    private let operations: AsyncOperationQueue
    private let inbox: FeatureInbox
    private let logger: Logger

    init(operations: AsyncOperationQueue, inbox: FeatureInbox, logger: Logger) {
        self.operations = operations
        self.inbox = inbox
        self.logger = logger
    }

    /// Subscribes to the operation queue's events now, before start-up runs its first operation;
    /// `run` hands them to the inhibitor.
    func begin() {
        if queueEvents == nil { queueEvents = operations.events() }
    }

    func run() async throws {
        begin()
        if let events = queueEvents {
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .busy, .drained: await inhibitor?.handle(event)
                case .started, .finished: break
                }
            }
        }
        // The queue's events end only when it shuts down; the lock is kept until the daemon winds down.
        try? await gracefulShutdown()
        await stop()
    }

    /// Creates the inhibitor on the daemon's bus, without any bus traffic yet.
    func attach(_ connection: DBusConnection) {
        guard inhibitor == nil, !stopped else { return }
        inhibitor = SleepInhibitor(provider: LogindClient(connection: connection), logger: logger)
    }

    /// Follows `PrepareForSleep` (reported to the reducer) and logind's sleep events for the lock.
    func followLogind(on connection: DBusConnection) async {
        attach(connection)
        guard !followingLogind, !stopped, let inhibitor else { return }
        followingLogind = true
        let rule = DBusMatchRule(sender: Self.logindName, path: "/org/freedesktop/login1",
                                 interface: "org.freedesktop.login1.Manager", member: "PrepareForSleep")
        do {
            let signals = try await connection.signals(matching: rule)
            let inbox = inbox
            followers.append(Task {
                for await signal in signals {
                    guard case .bool(let starting)? = signal.arguments.first else { continue }
                    await inbox.send(.systemSleep(starting: starting))
                }
            })
        } catch {
            if !Task.isCancelled { logger.notice("not following suspend and resume: \(error.description)") }
        }
        let events: LogindSleepEvents
        do { events = try await LogindClient(connection: connection).sleepEvents() } catch {
            // Cancelled: speakerd is stopping, which is no news about suspend.
            if !Task.isCancelled { logger.notice("sleep delay lock will not follow suspend and resume: \(error)") }
            return
        }
        guard !stopped else { return }
        followers.append(Task { await inhibitor.follow(sleepEvents: events) })
        if await operations.isBusy { await inhibitor.handle(QueueEvent.busy) }
    }

    /// Releases any lock and stops following logind.
    func stop() async {
        guard !stopped else { return }
        stopped = true
        for follower in followers { follower.cancel() }
        followers = []
        await inhibitor?.shutdown()
        inhibitor = nil
    }
}
