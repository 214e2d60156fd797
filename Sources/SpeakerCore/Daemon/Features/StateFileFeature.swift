import BlueZ
import Configuration
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

/// The state file: the known speakers and their volumes, and the one status condition it can
/// raise, "speakers will not be remembered" (its directory cannot be written).
///
/// It owns the ``StateStore`` and the retry of a failed write: every 5 s at first, doubling to
/// once a minute, until the write works. The problem is a status warning, never only a log line;
/// each change of it is reported (`statusChanged`). As a `Service` it runs until the daemon
/// winds down, when a retry under way stops (a retry sleeping on a test clock nobody moves would
/// otherwise outlive the daemon).
actor StateFileFeature: DaemonFeature {
    nonisolated let store: StateStore
    /// Why speakers may not be remembered (the state directory cannot be written), if so.
    private(set) var problem: String?
    private var retry: Task<Void, Never>?
    private var stopped = false
    private let inbox: FeatureInbox
    private let clock: any Clock<Duration>
    private let logger: Logger

    init(directory: String, inbox: FeatureInbox, clock: any Clock<Duration>, logger: Logger) {
        self.store = StateStore(directory: directory, logger: logger)
        self.inbox = inbox
        self.clock = clock
        self.logger = logger
    }

    /// Stops the retry and arms no new one (the daemon winds down, or was let go of).
    func stop() {
        stopped = true
        retry?.cancel()
        retry = nil
    }

    var knownSpeakers: [KnownSpeaker] {
        get async { await store.knownSpeakers }
    }

    /// Records a connection to `address`; returns whether the speaker was unknown before, asked
    /// before recording, so a directory that cannot be written does not make every speaker new.
    func recordConnection(to address: BluetoothAddress, name: String, at date: Date) async -> Bool {
        let isNew = await !store.knownSpeakers.contains { $0.address == address }
        do {
            try await store.recordConnection(to: address, name: name, at: date)
            await writtenIfSaved()
        } catch {
            await writeFailed(error)
        }
        return isNew
    }

    /// Remembers `percent` as the volume of `address`.
    func rememberVolume(_ percent: Int, of address: BluetoothAddress) async {
        do {
            _ = try await store.rememberVolume(percent, of: address)
            await writtenIfSaved()
        } catch {
            await writeFailed(error)
        }
    }

    /// After a call that did not fail: the problem is over only if everything is on disk now. A
    /// volume that did not change, or a speaker not known yet, writes nothing, and said nothing
    /// of a directory that still cannot be written ("writable again" was logged, and the
    /// warning left status, while the speaker connected earlier was still not saved).
    private func writtenIfSaved() async {
        guard await !store.hasUnsavedChanges else { return }
        await written()
    }

    private func written() async {
        guard problem != nil else { return }
        logger.notice("state directory writable again: known speakers are saved")
        problem = nil
        retry?.cancel()
        retry = nil
        await inbox.send(.statusChanged)
    }

    private func writeFailed(_ error: StateStoreError) async {
        let problem = "speakers will not be remembered: \(error)"
        // Said when it begins: each failed write names a temporary file of its own, so the words
        // differ every time while the problem is the same one (status shows the latest).
        let changed = self.problem == nil
        if changed { logger.error("\(problem)") }
        self.problem = problem
        armRetry()
        if changed { await inbox.send(.statusChanged) }
    }

    private func armRetry() {
        guard retry == nil, !stopped else { return }
        let clock = clock
        retry = Task { [weak self] in
            var delay = Duration.seconds(5)
            while !Task.isCancelled {
                do { try await clock.sleep(for: delay) } catch { return }
                guard let self, await self.retryOnce() else { return }
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// One retry of the failed write; true while something is still left to write.
    private func retryOnce() async -> Bool {
        do {
            try await store.savePending()
        } catch {
            problem = "speakers will not be remembered: \(error)"
            return true
        }
        retry = nil
        await written()
        return false
    }
}
