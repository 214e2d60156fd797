import BlueZ
import DBus
import Readiness
import ServiceLifecycle
import SpeakerdAPI

/// Scanning: one discovery at a time, shared by every scan asked while it runs, and the
/// candidates announced as they come (`ScanCandidates`).
///
/// A scan asked while a discovery runs joins it (``SharedDiscovery``), so every call answers
/// within its own length and nobody's scan waits for another's. A scan of the configured
/// length that joins answers when the running discovery ends, however little of it is left. A
/// scan asked for a length of its own (`scan --duration`) keeps the discovery going until then.
/// Every scan answers at its own end at the latest, with what BlueZ has heard by then, so
/// start-up's scan-and-pick is not held by a user's five-minute scan. (A scan asked in the
/// moment between a discovery's end and its answer joins that answer.)
actor ScanFeature: DaemonFeature {
    /// Where a discovery runs: BlueZ and the adapter's address.
    typealias Place = (bluez: any BlueZClient, adapter: BluetoothAddress)

    /// The discovery under way, which every scan asked meanwhile joins.
    nonisolated let shared = SharedDiscovery()
    /// Discoveries under way, and the candidate list last announced during them.
    private(set) var discoveries = 0
    private var lastAnnounced: ScanReport?
    /// When the discovery under way stops; a scan that joins it asking for longer moves this later.
    private var discoveryEnds: ErasedClock.Instant?
    private let scanDuration: Duration
    private let operations: AsyncOperationQueue
    private let stateFile: StateFileFeature
    private let clock: ErasedClock

    init(scanDuration: Duration, operations: AsyncOperationQueue, stateFile: StateFileFeature, clock: ErasedClock) {
        self.scanDuration = scanDuration
        self.operations = operations
        self.stateFile = stateFile
        self.clock = clock
    }

    /// Scans end with their callers (a request, start-up's step); nothing of its own to stop.
    func stop() {}

    /// The candidates of a discovery of `duration` (`scan_seconds` when nil): the one running
    /// now, joined, or a new one at `place` (asked only when one starts).
    func discover(duration: Duration?, at place: @escaping @Sendable () async throws -> Place) async throws -> [RankedCandidate] {
        let mine = clock.now.advanced(by: duration ?? scanDuration)
        if discoveryEnds == nil || duration != nil { discoveryEnds = max(discoveryEnds ?? mine, mine) }
        let clock = clock
        return try await withThrowingTaskGroup(of: [RankedCandidate]?.self) { group in
            group.addTask { [weak self] in
                guard let self else { throw CancellationError() }
                return try await self.shared.join { [weak self] in
                    guard let self else { throw CancellationError() }
                    return try await self.discoverOnce(at: try await place())
                }
            }
            group.addTask { [weak self] in
                guard let self else { return nil }
                try await clock.sleep(until: mine, tolerance: nil)
                return try await self.candidatesIfDiscoveryOutlasts(mine, at: place)
            }
            // The first answer: the discovery's, or this scan's own end while a longer one runs on.
            while let answer = try await group.next() {
                if let answer {
                    group.cancelAll()
                    return answer
                }
            }
            throw CancellationError()
        }
    }

    /// What BlueZ has heard so far, when the discovery under way goes on after `end`; nil when it
    /// ends then (its own answer is the one to give).
    private func candidatesIfDiscoveryOutlasts(_ end: ErasedClock.Instant,
                                               at place: @Sendable () async throws -> Place) async throws -> [RankedCandidate]? {
        guard let ends = discoveryEnds, ends > end, let bluez = try? await place().bluez else { return nil }
        return try await candidates(from: bluez)
    }

    /// One discovery on the injected clock, until `discoveryEnds` (which a joining scan may move
    /// later), as a speaker operation; every device heard, audio sinks ranked first.
    private func discoverOnce(at place: Place) async throws -> [RankedCandidate] {
        let (bluez, adapterAddress) = place
        discoveries += 1
        defer {
            discoveries -= 1
            if discoveries == 0 { discoveryEnds = nil }
        }
        lastAnnounced = ScanReport(candidates: [])  // nothing found yet is no news
        // The longest scan a client may ask for, and the BlueZ calls' own time around it.
        let timeout = max(scanDuration, .seconds(ScanLength.seconds.upperBound)) + .seconds(10)
        try await operations.perform("discovery on \(adapterAddress)", group: "discovery", timeout: timeout) { [weak self] in
            try await bluez.startDiscovery(on: adapterAddress, filter: DiscoveryFilter.classicDevices)
            do { try await self?.waitForDiscoveryEnd() } catch {
                try? await bluez.stopDiscovery(on: adapterAddress)
                throw error
            }
            try? await bluez.stopDiscovery(on: adapterAddress)
        }
        return try await candidates(from: bluez)
    }

    /// Sleeps until `discoveryEnds`, again if a joining scan moved it meanwhile.
    private func waitForDiscoveryEnd() async throws {
        while let ends = discoveryEnds, clock.now < ends {
            try await clock.sleep(until: ends, tolerance: nil)
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
        guard discoveries > 0 else { return }
        switch event {
        case .deviceAdded, .deviceChanged, .deviceRemoved: break
        default: return
        }
        guard let current = try? await candidates(from: bluez) else { return }
        let report = CandidateRanking.report(current)
        guard report != lastAnnounced else { return }
        lastAnnounced = report
        try? connection.emitSignal(path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "ScanCandidates",
                                   arguments: [SpeakerdDBusRecords.encode(report)])
    }
}
