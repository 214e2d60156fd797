import SpeakerdAPI

/// Scanning, decided in one synchronous step: one discovery at a time, shared by every scan asked
/// while it runs, each scan answered exactly once, and the candidates announced as they come.
/// A value: ``ScanFeature`` feeds it the scans asked and what BlueZ did, and runs its effects.
///
/// Discoveries are speaker operations of one group, so scans asked together once ran one after
/// another (sixteen answered at 10, 20, … 160 s). A scan asked while a discovery runs joins it
/// instead. A scan of the configured length answers when the running discovery ends, however
/// little of it is left; a scan asked for a length of its own (`scan --duration`) keeps the
/// discovery going until then. Every scan answers at its own end at the latest, with what BlueZ
/// has heard by then, so start-up's scan-and-pick is not held by a user's five-minute scan. A scan
/// asked between a discovery's end and its answer joins that answer. A scan whose caller leaves
/// is answered `cancelled` at once; the discovery stops when nobody waits for it.
struct ScanSharing: Equatable, Sendable {
    /// One scan asked (a request, start-up's step), numbered by the runner.
    typealias ScanID = UInt64

    /// Why a scan has no candidates.
    enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// speakerd cannot scan now (no adapter, bluetoothd away): its own words for the caller.
        case notReady(SpeakerdError)
        /// BlueZ's discovery failed.
        case discovery(String)
        /// The caller left, or speakerd is winding down.
        case cancelled

        var description: String {
            switch self {
            case .notReady(let error): error.description
            case .discovery(let reason): reason
            case .cancelled: "cancelled"
            }
        }
    }

    typealias Answer = Result<[RankedCandidate], Failure>

    /// The timers the sharing arms: the discovery's end, and each scan's own end.
    enum Timer: Hashable, Sendable {
        case discoveryEnd
        case scanEnd(ScanID)
    }

    enum Event: Equatable, Sendable {
        /// A scan of `duration` (the configured length when nil) was asked.
        case asked(ScanID, duration: Duration?)
        /// The caller of a scan stopped waiting (its client left the bus).
        case left(ScanID)
        case timerFired(Timer, deadline: ErasedClock.Instant)
        /// The discovery `run` ended: stopped as asked, and the candidates BlueZ has heard, or why not.
        case discovered(run: UInt64, Answer)
        /// The candidates read for one scan answered before the discovery's end.
        case candidatesRead(ScanID, Answer)
        /// A device appeared, changed or went while a discovery may run.
        case deviceChanged
        /// The candidates read for an announcement.
        case announcementRead([RankedCandidate])
        case stop
    }

    enum Effect: Equatable, Sendable {
        /// Start discovery `run` as a speaker operation; it lasts until `stopDiscovery(run:)`,
        /// then reads the candidates and answers with `discovered`.
        case startDiscovery(run: UInt64)
        case stopDiscovery(run: UInt64)
        /// Cancel discovery `run` (nobody waits for it): stopped, and not answered.
        case cancelDiscovery(run: UInt64)
        case arm(Timer, deadline: ErasedClock.Instant)
        case cancel(Timer)
        /// Read BlueZ's candidates now for scan `id`; answered by `candidatesRead`.
        case readCandidates(for: ScanID)
        /// Read BlueZ's candidates for an announcement; answered by `announcementRead`.
        case readAnnouncement
        /// The scan's one answer.
        case answer(ScanID, Answer)
        /// `ScanCandidates` with the list so far.
        case announce(ScanReport)
    }

    private struct Discovery: Equatable, Sendable {
        var run: UInt64
        var ends: ErasedClock.Instant
        /// Scans waiting for the discovery's answer, with their own ends.
        var waiters: [ScanID: ErasedClock.Instant]
        /// The waiters whose own end comes before the discovery's: their timers are armed.
        var timed: Set<ScanID> = []
        /// Stopped; its candidates are being read (a scan asked now joins that answer).
        var stopping = false
        var lastAnnounced = ScanReport(candidates: [])
    }

    /// `scan_seconds`: the length of a scan asked without one.
    let scanDuration: Duration
    private var discovery: Discovery?
    /// Scans answered before the discovery's end, their candidates being read.
    private(set) var beingRead: Set<ScanID> = []
    private var runs: UInt64 = 0
    private var stopped = false

    init(scanDuration: Duration) {
        self.scanDuration = scanDuration
    }

    /// Whether a discovery runs (or is being answered).
    var isDiscovering: Bool { discovery != nil }
    /// The scans not answered yet.
    var unanswered: Set<ScanID> { Set(discovery.map { Array($0.waiters.keys) } ?? []).union(beingRead) }
    /// The timers armed now.
    var armedTimers: Set<Timer> {
        guard let discovery else { return [] }
        return Set(discovery.timed.map(Timer.scanEnd)).union(discovery.stopping ? [] : [.discoveryEnd])
    }

    mutating func step(_ event: Event, now: ErasedClock.Instant) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case let .asked(id, duration):
            asked(id, duration: duration, now: now, into: &effects)
        case .left(let id):
            left(id, into: &effects)
        case let .timerFired(timer, deadline):
            timerFired(timer, deadline: deadline, now: now, into: &effects)
        case let .discovered(run, answer):
            guard let discovery, discovery.run == run else { break }
            self.discovery = nil
            if !discovery.stopping { effects.append(.cancel(.discoveryEnd)) }
            for id in discovery.waiters.keys.sorted() {
                if discovery.timed.contains(id) { effects.append(.cancel(.scanEnd(id))) }
                effects.append(.answer(id, answer))
            }
        case let .candidatesRead(id, answer):
            guard beingRead.remove(id) != nil else { break }
            effects.append(.answer(id, answer))
        case .deviceChanged:
            if discovery != nil, !stopped { effects.append(.readAnnouncement) }
        case .announcementRead(let candidates):
            guard var discovery else { break }
            let report = CandidateRanking.report(candidates)
            guard report != discovery.lastAnnounced else { break }
            discovery.lastAnnounced = report
            self.discovery = discovery
            effects.append(.announce(report))
        case .stop:
            stopped = true
            if let discovery {
                effects.append(.cancelDiscovery(run: discovery.run))
                if !discovery.stopping { effects.append(.cancel(.discoveryEnd)) }
                for id in discovery.waiters.keys.sorted() {
                    if discovery.timed.contains(id) { effects.append(.cancel(.scanEnd(id))) }
                    effects.append(.answer(id, .failure(.cancelled)))
                }
                self.discovery = nil
            }
            for id in beingRead.sorted() { effects.append(.answer(id, .failure(.cancelled))) }
            beingRead = []
        }
        return effects
    }

    private mutating func asked(_ id: ScanID, duration: Duration?, now: ErasedClock.Instant, into effects: inout [Effect]) {
        guard !stopped else {
            effects.append(.answer(id, .failure(.cancelled)))
            return
        }
        let mine = now.advanced(by: duration ?? scanDuration)
        guard var discovery else {
            runs += 1
            discovery = Discovery(run: runs, ends: mine, waiters: [id: mine])
            effects.append(.startDiscovery(run: runs))
            effects.append(.arm(.discoveryEnd, deadline: mine))
            return
        }
        discovery.waiters[id] = mine
        // A scan of its own length keeps a running discovery going until its end; the scans
        // that waited for the old end are answered at their own ends now.
        if duration != nil, mine > discovery.ends, !discovery.stopping {
            discovery.ends = mine
            effects.append(.arm(.discoveryEnd, deadline: mine))
        }
        if !discovery.stopping {
            for (waiter, end) in discovery.waiters.sorted(by: { $0.key < $1.key })
            where end < discovery.ends && !discovery.timed.contains(waiter) {
                discovery.timed.insert(waiter)
                effects.append(.arm(.scanEnd(waiter), deadline: end))
            }
        }
        self.discovery = discovery
    }

    private mutating func left(_ id: ScanID, into effects: inout [Effect]) {
        if beingRead.remove(id) != nil {
            effects.append(.answer(id, .failure(.cancelled)))
            return
        }
        guard var discovery, discovery.waiters.removeValue(forKey: id) != nil else { return }
        if discovery.timed.remove(id) != nil { effects.append(.cancel(.scanEnd(id))) }
        effects.append(.answer(id, .failure(.cancelled)))
        if discovery.waiters.isEmpty {
            if !discovery.stopping { effects.append(.cancel(.discoveryEnd)) }
            effects.append(.cancelDiscovery(run: discovery.run))
            self.discovery = nil
        } else {
            self.discovery = discovery
        }
    }

    private mutating func timerFired(_ timer: Timer, deadline: ErasedClock.Instant, now: ErasedClock.Instant,
                                     into effects: inout [Effect]) {
        guard var discovery, !stopped else { return }
        switch timer {
        case .discoveryEnd:
            guard deadline == discovery.ends, !discovery.stopping else { return }
            discovery.stopping = true
            self.discovery = discovery
            effects.append(.stopDiscovery(run: discovery.run))
        case .scanEnd(let id):
            // This scan's own end came while the discovery goes on (a longer scan joined):
            // it is answered with what BlueZ has heard so far.
            guard let end = discovery.waiters[id], end == deadline, discovery.timed.contains(id), !discovery.stopping else { return }
            discovery.waiters[id] = nil
            discovery.timed.remove(id)
            self.discovery = discovery
            beingRead.insert(id)
            effects.append(.readCandidates(for: id))
        }
    }
}
