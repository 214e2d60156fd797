import AsyncSignals
import BlueZ
import DBus
import Readiness
import ServiceLifecycle
import SpeakerdAPI

/// Runs scanning (``ScanSharing``, where it is decided which scans share a discovery, when it
/// stops and who is answered with what): numbers each scan asked, feeds the sharing what BlueZ
/// did, and runs its effects: the discovery as a speaker operation, the timers, the candidate
/// reads, the answers and the `ScanCandidates` announcements.
actor ScanFeature: DaemonFeature {
    /// Where a discovery runs: BlueZ and the adapter's address.
    typealias Place = (bluez: any BlueZClient, adapter: BluetoothAddress)

    private var sharing: ScanSharing
    private var nextScan: ScanSharing.ScanID = 0
    /// The answers of the scans not answered yet, each resolved once.
    private var answers: [ScanSharing.ScanID: OneShotSignal<ScanSharing.Answer, Never>] = [:]
    private var timers: [ScanSharing.Timer: Task<Void, Never>] = [:]
    /// The discovery under way: its operation, and the signal that ends its wait.
    private var running: (run: UInt64, task: Task<Void, Never>, stop: OneShotSignal<Void, Never>)?
    /// Where the discovery under way runs (candidates are read there), and where the next one
    /// runs, asked for when it starts; and where announcements go.
    private var place: Place?
    private var findPlace: (@Sendable () async throws -> Place)?
    private var announceOn: (bluez: any BlueZClient, connection: DBusConnection)?
    private let operations: AsyncOperationQueue
    private let stateFile: StateFileFeature
    private let clock: ErasedClock

    init(scanDuration: Duration, operations: AsyncOperationQueue, stateFile: StateFileFeature, clock: ErasedClock) {
        sharing = ScanSharing(scanDuration: scanDuration)
        self.operations = operations
        self.stateFile = stateFile
        self.clock = clock
    }

    /// Every scan still waiting is answered `cancelled`, and the discovery stops.
    func stop() async { await feed(.stop) }

    /// The candidates of a scan of `duration` (`scan_seconds` when nil): the discovery running
    /// now, joined, or a new one at `place` (asked only when one starts).
    func discover(duration: Duration?, at place: @escaping @Sendable () async throws -> Place) async throws -> [RankedCandidate] {
        nextScan += 1
        let id = nextScan
        findPlace = place
        let signal = OneShotSignal<ScanSharing.Answer, Never>()
        answers[id] = signal
        await feed(.asked(id, duration: duration))
        // A caller that leaves stops waiting at once; the sharing hears of it (the discovery
        // stops once nobody waits for it).
        let answer: ScanSharing.Answer
        do {
            answer = try await signal.result().get()
        } catch {
            await feed(.left(id))
            throw CancellationError()
        }
        switch answer {
        case .success(let candidates): return candidates
        case .failure(.notReady(let error)): throw error
        case .failure(.discovery(let reason)): throw ScanFailed(reason: reason)
        case .failure(.cancelled): throw CancellationError()
        }
    }

    /// A discovery that failed, in BlueZ's or the queue's words.
    struct ScanFailed: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    private func feed(_ event: ScanSharing.Event) async {
        for effect in sharing.step(event, now: clock.now) { await run(effect) }
    }

    private func run(_ effect: ScanSharing.Effect) async {
        switch effect {
        case .startDiscovery(let run):
            let stop = OneShotSignal<Void, Never>()
            let task = Task { [weak self] in
                guard let self else { return }
                let answer = await self.discovery(stoppingAt: stop)
                await self.feed(.discovered(run: run, answer))
            }
            running = (run, task, stop)
        case .stopDiscovery(let run):
            if running?.run == run { running?.stop.succeed(()) }
        case .cancelDiscovery(let run):
            if running?.run == run {
                running?.task.cancel()
                running = nil
            }
        case let .arm(timer, deadline):
            timers[timer]?.cancel()
            timers[timer] = clock.timer(at: deadline) { [weak self] in await self?.feed(.timerFired(timer, deadline: deadline)) }
        case .cancel(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        case .readCandidates(let id):
            let answer: ScanSharing.Answer
            if let bluez = place?.bluez, let candidates = try? await candidates(from: bluez) {
                answer = .success(candidates)
            } else {
                answer = .failure(.discovery("BlueZ's devices could not be read"))
            }
            await feed(.candidatesRead(id, answer))
        case .readAnnouncement:
            guard let bluez = announceOn?.bluez, let candidates = try? await candidates(from: bluez) else { return }
            await feed(.announcementRead(candidates))
        case let .answer(id, answer):
            _ = answers.removeValue(forKey: id)?.succeed(answer)
        case .announce(let report):
            try? announceOn?.connection.emitSignal(path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "ScanCandidates",
                                        arguments: [SpeakerdDBusRecords.encode(report)])
        }
    }

    /// One discovery, as a speaker operation, until `stop`; every device heard, audio sinks ranked first.
    private func discovery(stoppingAt stop: OneShotSignal<Void, Never>) async -> ScanSharing.Answer {
        let found: Place
        do {
            guard let findPlace else { throw CancellationError() }
            found = try await findPlace()
        } catch let error as SpeakerdError {
            return .failure(.notReady(error))
        } catch {
            return .failure(.cancelled)
        }
        place = found
        let (bluez, adapterAddress) = found
        // The longest scan a client may ask for, and the BlueZ calls' own time around it.
        let timeout = max(sharing.scanDuration, .seconds(ScanLength.seconds.upperBound)) + .seconds(10)
        do {
            try await operations.perform("discovery on \(adapterAddress)", group: "discovery", timeout: timeout) {
                try await bluez.startDiscovery(on: adapterAddress, filter: DiscoveryFilter.classicDevices)
                do { _ = try await stop.result() } catch {
                    try? await bluez.stopDiscovery(on: adapterAddress)
                    throw error
                }
                try? await bluez.stopDiscovery(on: adapterAddress)
            }
            return .success(try await candidates(from: bluez))
        } catch is CancellationError {
            return .failure(.cancelled)
        } catch {
            return .failure(.discovery("\(error)"))
        }
    }

    /// The devices BlueZ knows, for `CandidateRanking`: the ones scan-and-pick may offer are
    /// marked `audioSink`; the others (a phone, a keyboard) are reported for `scan --all` only.
    func candidates(from bluez: any BlueZClient) async throws -> [RankedCandidate] {
        let known = await stateFile.knownSpeakers.map(\.address)
        return try await bluez.devices().map { device in
            RankedCandidate(address: device.address, name: device.displayName, rssi: device.rssi.map(Int.init),
                            knownRank: known.firstIndex(of: device.address), trusted: device.trusted,
                            audioSink: device.audioSink.isOffered)
        }
    }

    /// While a discovery runs, a device appearing or changing re-announces the candidates
    /// (`ScanCandidates`), so `composer-cli scan` shows them as they come rather than after
    /// `scan_seconds`. Announced only when the list changed.
    func announceCandidates(after event: BlueZEvent, from bluez: any BlueZClient, on connection: DBusConnection) async {
        switch event {
        case .deviceAdded, .deviceChanged, .deviceRemoved: break
        default: return
        }
        announceOn = (bluez, connection)
        await feed(.deviceChanged)
    }
}
