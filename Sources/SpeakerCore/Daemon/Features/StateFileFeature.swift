import BlueZ
import Configuration
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

/// The state file: the known speakers and their volumes (``StateStore``), and the runner of
/// ``StateFileHealth``, which decides the one status condition the file can raise ("speakers
/// will not be remembered") and the retry of a failed write. As a `Service` it runs until the
/// daemon winds down, when a retry under way stops.
actor StateFileFeature: DaemonFeature {
    nonisolated let store: StateStore
    private var health = StateFileHealth()
    private var retry: Task<Void, Never>?
    private let inbox: FeatureInbox
    private let clock: ErasedClock
    private let logger: Logger

    init(directory: String, inbox: FeatureInbox, clock: ErasedClock, logger: Logger) {
        self.store = StateStore(directory: directory, logger: logger)
        self.inbox = inbox
        self.clock = clock
        self.logger = logger
    }

    /// Why speakers may not be remembered (the state directory cannot be written), if so.
    var problem: String? { health.problem }

    /// Stops the retry and arms no new one (the daemon winds down, or was let go of).
    func stop() async { await feed(.stop) }

    var knownSpeakers: [KnownSpeaker] {
        get async { await store.knownSpeakers }
    }

    /// Records a connection to `address`; returns whether the speaker was unknown before, asked
    /// before recording, so a directory that cannot be written does not make every speaker new.
    func recordConnection(to address: BluetoothAddress, name: String, at date: Date) async -> Bool {
        let isNew = await !store.knownSpeakers.contains { $0.address == address }
        do {
            try await store.recordConnection(to: address, name: name, at: date)
            await feed(.written(allSaved: await !store.hasUnsavedChanges))
        } catch {
            await feed(.writeFailed(error.description))
        }
        return isNew
    }

    /// Remembers `percent` as the volume of `address`.
    func rememberVolume(_ percent: Int, of address: BluetoothAddress) async {
        do {
            _ = try await store.rememberVolume(percent, of: address)
            await feed(.written(allSaved: await !store.hasUnsavedChanges))
        } catch {
            await feed(.writeFailed(error.description))
        }
    }

    private func feed(_ event: StateFileHealth.Event) async {
        for effect in health.step(event, now: clock.now) {
            switch effect {
            case .armRetry(let deadline):
                retry?.cancel()
                retry = clock.timer(at: deadline) { [weak self] in await self?.feed(.retryDue(deadline: deadline)) }
            case .cancelRetry:
                retry?.cancel()
                retry = nil
            case .savePending:
                let failure: String?
                do {
                    try await store.savePending()
                    failure = nil
                } catch {
                    failure = error.description
                }
                await feed(.retried(failure: failure))
            case .publishStatus:
                await inbox.send(.statusChanged)
            case let .log(level, line):
                logger.log(level: level, "\(line)")
            }
        }
    }
}
