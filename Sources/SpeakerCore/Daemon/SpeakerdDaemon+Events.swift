import BlueZ
import Logind
import SpeakerdAPI
/// BlueZ events: the link's are the link owner's to judge; adapters and bluetoothd close and
/// reopen the compatibility gate.
extension SpeakerdDaemon {
    func startEventLoop() {
        guard let bluez, eventTask == nil else { return }
        let events = bluez.events()
        eventTask = Task { [weak self] in
            for await event in events {
                await self?.handle(event)
            }
        }
    }

    func handle(_ event: BlueZEvent) async {
        // Losing the adapter or bluetoothd is recorded before the link hears of it: the link
        // going down is its consequence, and readiness taken in between would blame the
        // speaker ("connecting to JBL Flip 5…") for what bluetoothd did.
        switch event {
        case .adapterRemoved(let name, _) where name == adapter?.name:
            adapter = nil
            let problem = CompatibilityProblem.noAdapter(configured: configuration.adapter)
            lifecycle = .blocked(problem)
            await update { $0.bluetooth = .blocked(problem) }
        case .bluetoothdVanished:
            adapter = nil
            await link.attach(nil)
            lifecycle = .blocked(.noBlueZ)
            await update { $0.bluetooth = .blocked(.noBlueZ) }
        default:
            break
        }
        await link.observe(event, known: await stateStore.knownSpeakers)
        await announceCandidatesDuringScan(after: event)
        switch event {
        case .adapterAdded(let added):
            if case .blocked(.noAdapter) = lifecycle { await reopenGate(because: "adapter \(added.name) appeared") }
        case .adapterChanged(let changed):
            if case .blocked(.adapterBlocked) = lifecycle, !changed.isBlocked {
                await reopenGate(because: "adapter \(changed.name) was unblocked")
            }
        case .bluetoothdRestarted, .bluetoothdAppeared:
            if case .blocked = lifecycle { await reopenGate(because: "bluetoothd is back") }
        default:
            break
        }
    }

    /// The condition that closed the compatibility gate cleared: run start-up again, in-process.
    ///
    /// Start-up runs in a task of its own: its steps wait on BlueZ, whose events must keep
    /// flowing meanwhile (a speaker connecting, bluetoothd leaving again).
    func reopenGate(because reason: String) async {
        guard case .blocked = lifecycle else { return }
        logger.notice("\(reason); resuming start-up")
        lifecycle = .starting
        rerun?.cancel()
        rerun = Task { [weak self] in await self?.runStartup(reason: reason) }
    }

    /// The sleep delay lock, if the daemon has one (see ``SleepFeature``).
    var sleepInhibitor: SleepInhibitor? {
        get async { await features.sleep.inhibitor }
    }

    /// logind's `PrepareForSleep(start)` (the sleep feature reports it): hold still while
    /// asleep, reconnect shortly after.
    public func systemSleep(starting: Bool) async {
        logger.info(starting ? "system is going to sleep" : "system resumed; reconnecting shortly")
        await link.systemSleep(starting: starting)
    }

    /// The candidates of a discovery of `duration` (`scan_seconds` when nil): the one running
    /// now, joined, or a new one (`SharedDiscovery`), so concurrent scans share it instead of
    /// queueing one behind another.
    ///
    /// A scan of the configured length that joins answers when the running discovery ends,
    /// however little of it is left. A scan asked for a length of its own (`scan --duration`)
    /// keeps the discovery going until then. Every scan answers at its own end at the latest,
    /// with what BlueZ has heard by then, so start-up's scan-and-pick is not held by a user's
    /// five-minute scan. (A scan asked in the moment between a discovery's end and its answer
    /// joins that answer.)
    func discover(duration: Duration? = nil) async throws -> [RankedCandidate] {
        let mine = clock.now.advanced(by: duration ?? configuration.scanDuration)
        if discoveryEnds == nil || duration != nil { discoveryEnds = max(discoveryEnds ?? mine, mine) }
        return try await withThrowingTaskGroup(of: [RankedCandidate]?.self) { group in
            group.addTask { [weak self] in
                guard let self else { throw CancellationError() }
                return try await self.sharedDiscovery.join { [weak self] in
                    guard let self else { throw CancellationError() }
                    return try await self.discoverOnce()
                }
            }
            group.addTask { [weak self] in
                guard let self else { return nil }
                try await clock.sleep(until: mine, tolerance: nil)
                return try await self.candidatesIfDiscoveryOutlasts(mine)
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
    private func candidatesIfDiscoveryOutlasts(_ end: ErasedClock.Instant) async throws -> [RankedCandidate]? {
        guard let ends = discoveryEnds, ends > end, let bluez else { return nil }
        return try await candidates(from: bluez)
    }

    /// One discovery on the injected clock, until `discoveryEnds` (which a joining scan may move
    /// later), as a speaker operation; every device heard, audio sinks ranked first.
    private func discoverOnce() async throws -> [RankedCandidate] {
        guard let bluez, let adapterAddress = adapter?.address else {
            throw SpeakerdError.rejected(name: SpeakerdBus.ErrorName.notReady, message: phase.statusLine)
        }
        discoveries += 1
        defer {
            discoveries -= 1
            if discoveries == 0 { discoveryEnds = nil }
        }
        lastAnnouncedCandidates = ScanReport(candidates: [])  // nothing found yet is no news
        // The longest scan a client may ask for, and the BlueZ calls' own time around it.
        let timeout = max(configuration.scanDuration, .seconds(ScanLength.seconds.upperBound)) + .seconds(10)
        try await runOperation("discovery on \(adapterAddress)", group: "discovery", timeout: timeout) { [weak self] in
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
        let known = await stateStore.knownSpeakers.map(\.address)
        return try await bluez.devices().map { device in
            RankedCandidate(address: device.address, name: device.displayName, rssi: device.rssi.map(Int.init),
                            knownRank: known.firstIndex(of: device.address), trusted: device.trusted,
                            audioSink: device.audioSink.isOffered)
        }
    }

    /// While a discovery runs, a device appearing or changing re-announces the candidates
    /// (`ScanCandidates`), so `composer-cli scan` shows them as they come rather than after
    /// `scan_seconds`. Announced only when the list changed.
    func announceCandidatesDuringScan(after event: BlueZEvent) async {
        guard discoveries > 0, let bluez, let connection else { return }
        switch event {
        case .deviceAdded, .deviceChanged, .deviceRemoved: break
        default: return
        }
        guard let current = try? await candidates(from: bluez) else { return }
        let report = CandidateRanking.report(current)
        guard report != lastAnnouncedCandidates else { return }
        lastAnnouncedCandidates = report
        try? connection.emitSignal(path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "ScanCandidates",
                                   arguments: [SpeakerdDBusRecords.encode(report)])
    }

    /// Runs `work` as a speaker operation and waits for it: cancelling the caller cancels it,
    /// its timeout ends it, a failure is rethrown with its reason.
    func runOperation(_ name: String, group: String, timeout: Duration,
                      _ work: @escaping @Sendable () async throws -> Void) async throws {
        let ticket = await operations.add(name, group: group, timeout: timeout) { _ in try await work() }
        let operations = operations
        let outcome = try await withTaskCancellationHandler { try await ticket.outcome() } onCancel: {
            Task { await operations.cancel(ticket.id) }
        }
        switch outcome {
        case .ok: return
        case .failed(let reason), .skipped(let reason): throw SpeakerOperationFailure(operation: name, reason: reason)
        case .timedOut: throw SpeakerOperationFailure(operation: name, reason: "timed out after \(timeout)")
        case .cancelled: throw CancellationError()
        }
    }
}

/// A speaker operation that did not finish well.
struct SpeakerOperationFailure: Error, CustomStringConvertible {
    let operation: String
    let reason: String
    var description: String { "\(operation) failed: \(reason)" }
}
