/// A logind sleep delay lock while a connect or a scan is under way, so a suspend does not cut
/// one in half (pairing half-done, discovery left on). Where there is no logind the inhibitor
/// says `unavailable` and everything here is a silent no-op.
///
/// The daemon has no operation queue: it reports its own in-flight speaker work to the
/// inhibitor as the queue would (`busy` when the first starts, `drained` when the last ends).
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
        if speakerWorkInFlight > 0 { await inhibitor.handle(QueueEvent.busy) }
    }

    /// Runs `work` with the sleep delay lock wanted (shared by overlapping connects and scans).
    func holdingSleepDelay<T>(_ work: () async throws -> T) async rethrows -> T {
        speakerWorkInFlight += 1
        if speakerWorkInFlight == 1 { await sleepInhibitor?.handle(QueueEvent.busy) }
        do {
            let result = try await work()
            await speakerWorkEnded()
            return result
        } catch {
            await speakerWorkEnded()
            throw error
        }
    }

    private func speakerWorkEnded() async {
        speakerWorkInFlight -= 1
        if speakerWorkInFlight == 0 { await sleepInhibitor?.handle(QueueEvent.drained) }
    }

    /// Releases any lock and stops following logind (daemon shutdown).
    func stopSleepInhibitor() async {
        inhibitorTask?.cancel()
        inhibitorTask = nil
        await sleepInhibitor?.shutdown()
        sleepInhibitor = nil
    }
}
