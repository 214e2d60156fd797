import Logind
import DBus
import Readiness
/// A logind sleep delay lock while a speaker operation (connect, scan) is under way, so a
/// suspend does not cut one in half (pairing half-done, discovery left on). The operation
/// queue's `busy` and `drained` events take and release it. Where there is no logind the
/// inhibitor says `unavailable` and everything here is a silent no-op.
extension SpeakerdDaemon {
    /// Creates the inhibitor on the daemon's bus, without any bus traffic yet.
    func makeSleepInhibitor(on connection: DBusConnection) {
        guard sleepInhibitor == nil else { return }
        sleepInhibitor = SleepInhibitor(provider: LogindClient(connection: connection), logger: logger)
    }

    /// Makes the inhibitor if needed and follows logind's suspend and resume.
    func startSleepInhibitor(on connection: DBusConnection) async {
        makeSleepInhibitor(on: connection)
        guard let inhibitor = sleepInhibitor, inhibitorTask == nil else { return }
        let client = LogindClient(connection: connection)
        let events: LogindSleepEvents
        do { events = try await client.sleepEvents() } catch {
            logger.notice("sleep delay lock will not follow suspend and resume: \(error)")
            return
        }
        inhibitorTask = Task { await inhibitor.follow(sleepEvents: events) }
        if await operations.isBusy { await inhibitor.handle(QueueEvent.busy) }
    }

    /// The operation queue's busy and drained events go to the inhibitor (made later, on the bus).
    func followOperations() {
        guard operationsWatcher == nil else { return }
        let events = operations.events()
        operationsWatcher = Task { [weak self] in
            for await event in events {
                switch event {
                case .busy, .drained: await self?.sleepInhibitor?.handle(event)
                case .started, .finished: break
                }
            }
        }
    }

    /// Releases any lock and stops following logind (daemon shutdown).
    func stopSleepInhibitor() async {
        inhibitorTask?.cancel()
        inhibitorTask = nil
        await sleepInhibitor?.shutdown()
        sleepInhibitor = nil
    }
}
