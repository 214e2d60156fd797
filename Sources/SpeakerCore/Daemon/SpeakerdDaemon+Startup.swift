import AsyncSignals
import BlueZ
import DBus
import Glibc
import Playback
import PlaybackService
import Readiness
import SpeakerdAPI

/// Start-up: the sequencer runs one scenario's graph; each step's work is a method here.
extension SpeakerdDaemon {
    typealias Step = StartupScenarios.Step

    /// `reason` says why start-up runs again (nil at boot).
    func runStartup(requestWaiting: Bool = false, reason: String? = nil) async {
        await run(.startupBegins)
        let started = clock.now.offset
        let known = await stateStore.knownSpeakers
        let scenario = StartupScenarios.scenario(for: .init(
            hasKnownSpeakers: !known.isEmpty, autoPick: configuration.autoPick, requestWaiting: requestWaiting))
        // Resolved when the speaker step has sent its Connect (or gave up before one): the
        // soundfont preload waits for it so it never competes with the critical path.
        let connectIssued = OneShotSignal<Void, Never>()
        let preloadAfter = StartupScenarios.soundfontWaitsForConnect(in: scenario) ? connectIssued : nil
        let operations = Dictionary(uniqueKeysWithValues: Step.Name.allCases.map { step in
            (step.rawValue, body(for: step, connectIssued: connectIssued, preloadAfter: preloadAfter))
        })
        let timeline: StartupTimeline
        do {
            let sequencer = try StartupSequencer(
                scenario: scenario, operations: operations, budget: StartupScenarios.budget(for: scenario),
                clock: dependencies.clock, logger: logger)
            let mayBeActivated = configuration.startedBySystemd && !requestWaiting
            startup.began(mayBeActivated ? (sequencer, operations, !known.isEmpty) : nil)
            timeline = await sequencer.run()
        } catch {
            logger.critical("start-up graph \(scenario.name) is invalid: \(error)")
            return
        }
        startup.ended(timeline, startedAfter: started, reason: reason)
        // speakerd was told to stop (SIGTERM/SIGINT), during start-up or just as it ended: nothing
        // more to start or say; "stopping: … received" was the line for it. (A rerun cut short by
        // a newer one, or by the gate closing, carries on as before: the lifecycle is theirs to set.)
        if tracking.isMuted || (Task.isCancelled && isWindingDown) { return }
        await followLogind()
        // The stop can also come while logind is being followed (an await): asked again.
        if tracking.isMuted { return }
        logger.info("start-up (\(timeline.scenario)) took \(Int(timeline.totalMs)) ms; critical path: \(timeline.criticalPath.joined(separator: " → "))")
        await run(.startupEnded)  // running, unless the compatibility gate closed (events reopen it)
    }

    /// The work of each start-up step.
    func body(for step: Step.Name, connectIssued: OneShotSignal<Void, Never>,
              preloadAfter: OneShotSignal<Void, Never>?) -> StartupOperation.Body {
        switch step {
        case .config: { _ in try await self.checkConfiguration() }
        case .bus: { _ in try await self.startBus() }
        case .bluez: { context in try await self.reachBlueZ(context) }
        case .adapter: { context in try await self.prepareAdapter(context) }
        case .connectKnown: { _ in try await self.connectKnownSpeakers(issued: connectIssued) }
        case .scanAndPick: { _ in try await self.scanAndPick() }
        case .soundfont: { _ in try await self.preloadSoundfontPolitely(after: preloadAfter) }
        case .audioBackend: { _ in try await self.checkAudioBackend() }
        case .playbackReady: { _ in try await self.becomePlaybackReady() }
        }
    }

    /// The configuration was parsed before the daemon started; this checks what it points to.
    func checkConfiguration() async throws {
        if access(configuration.soundfont, R_OK) != 0 {
            logger.warning("\(SoundFontError.missing(path: configuration.soundfont)); playback fails until it is there")
        }
    }

    /// The `bus` step: serves the API; READY=1 follows whatever the outcome (systemd must not
    /// wait out its start timeout for a daemon that will exit and be restarted).
    func startBus() async throws {
        do { try await serveAPI() } catch {
            await sendReadyOnce()
            throw error
        }
        await sendReadyOnce()
    }

    private func serveAPI() async throws {
        guard await features.bus.connection == nil, let connect = dependencies.connectBus else {
            await update(.bus(true))
            return
        }
        let connection = try await connect(configuration.bus)
        let object = try SpeakerdDBusObject.make(serving: self, initial: await currentStatus())
        try connection.export(object, at: SpeakerdBus.path)
        try await connection.requestName(SpeakerdBus.name)
        await features.bus.serve(object, on: connection)
        await features.sleep.attach(connection)
        await switchToLaunchedByRequestIfCalled(object, on: connection)
        await update(.bus(true))
    }

    /// Started by systemd for a D-Bus request (`SystemdService=` in the activation file),
    /// speakerd gets no `DBUS_STARTER_*` variables, so it cannot tell before start-up that a
    /// request is waiting. The bus daemon hands it the calls it queued for the name as soon as
    /// it owns the name; one more round trip to the bus makes sure they have all been read. If
    /// any arrived, the rest of start-up becomes the "launched by request" graph (the steps
    /// after the bus are not running yet, so only they change). Only a start by systemd can be
    /// such a start (`startedBySystemd`); others skip the round trip.
    func switchToLaunchedByRequestIfCalled(_ object: DBusObject, on connection: DBusConnection) async {
        guard let run = startup.revisable else { return }
        do { _ = try await connection.callBus("GetId", []) } catch {
            logger.warning("could not check for requests waiting at start-up: \(error)")
            return
        }
        guard object.methodCallsReceived > 0 else { return }
        let scenario = StartupScenarios.launchedByRequest(hasKnownSpeakers: run.knownSpeakers, autoPick: configuration.autoPick)
        do {
            try await run.sequencer.revise(to: scenario, operations: run.operations,
                                           budget: StartupScenarios.budget(for: scenario))
            logger.info("a request was waiting for speakerd's name: start-up continues as launched by request")
        } catch {
            logger.warning("a request is waiting, but start-up could not switch to \(scenario.name): \(error)")
        }
    }

    /// Subscribes to logind's sleep signals once start-up's graph has run: those are bus round
    /// trips that neither READY=1 nor the way to the speaker's `Connect` needs. The inhibitor
    /// itself exists from the bus step on (`SleepFeature.attach`), so connects and scans during
    /// start-up still take the lock; suspend and resume are followed from here on.
    func followLogind() async {
        guard let connection = await features.bus.connection, lifecycle != .stopping, lifecycle != .stopped else { return }
        await features.sleep.followLogind(on: connection)
    }

    /// READY=1 once the API answers: requests can be made from then on (they wait in the gate).
    func sendReadyOnce() async {
        await features.bus.sendReadyOnce(status: phase.statusLine)
    }

    func reachBlueZ(_ context: StartupContext) async throws {
        if features.bluez.client == nil {
            let made = try await dependencies.makeBlueZ(await features.bus.connection)
            features.bluez.keep(made)
            await features.speakerCare.use(made)
            await features.bluez.followEvents()
        }
        do {
            _ = try await features.bluez.client!.adapters()
        } catch let error as BlueZClientError where error == .bluetoothdNotRunning {
            throw await block(.noBlueZ, context)
        } catch BlueZClientError.unsupportedBlueZ(let found, let needed) {
            // Replacing bluetoothd (a new owner of org.bluez) reopens the gate, as for .noBlueZ.
            throw await block(.blueZTooOld(found: found, needed: needed), context)
        }
    }

    func prepareAdapter(_ context: StartupContext) async throws {
        guard let bluez = features.bluez.client else { throw await block(.noBlueZ, context) }
        let all = try await bluez.adapters()
        let chosen = configuration.adapter.map { name in all.first { $0.name == name } } ?? (all.first(where: \.powered) ?? all.first)
        guard var adapter = chosen else { throw await block(.noAdapter(configured: configuration.adapter), context) }
        if adapter.isBlocked { throw await block(.adapterBlocked(adapter: adapter.name), context) }
        if !adapter.powered, let address = adapter.address {
            do { try await bluez.powerOn(address) } catch let error as BlueZClientError {
                if case .adapterBlocked = error { throw await block(.adapterBlocked(adapter: adapter.name), context) }
                throw error
            }
            adapter.powered = true
        }
        await link.attach(bluez)
        // bluetoothd or the adapter may have gone while this step waited on them: the event
        // closed the gate, and claiming the adapter ready over it would hide that.
        if case .blocked(let problem) = lifecycle { throw context.abort(problem.description) }
        features.bluez.use(adapter)
        await update(.bluetooth(.ready))
    }

    /// Closes the compatibility gate: says why, and returns the abort that cancels the rest.
    func block(_ problem: CompatibilityProblem, _ context: StartupContext) async -> StartupAbort {
        await run(.blocked(problem))
        return context.abort(problem.description)
    }

    /// Asks the link to connect the known speakers, most recent first; if none answers,
    /// scan-and-pick takes over while the link keeps trying the most recent one in the
    /// background (a late success is the link's to see, and readiness follows it).
    ///
    /// `issued` is resolved just before the first `Connect` is asked for (the preload it
    /// releases first waits for its polite turn, 25 ms, so the call always goes out first), or
    /// when this step ends without one.
    func connectKnownSpeakers(issued: OneShotSignal<Void, Never>) async throws {
        // `issued` once a connect operation's work has begun (its Connect goes out next), or when
        // this step ends without one.
        let queueEvents = operations.events()
        let connectStarted = Task {
            for await case .started(let name, _) in queueEvents where name.hasPrefix(SpeakerLink.connectOperationPrefix) {
                _ = issued.succeed(())
                return
            }
        }
        defer {
            connectStarted.cancel()
            _ = issued.succeed(())
        }
        // A start-up run again (bluetoothd came back) does not overrule a user's disconnect.
        if await link.isHeldByUser { return }
        let known = await stateStore.knownSpeakers
        let choices = linkHistory.userChoices
        for (index, speaker) in known.enumerated() {
            guard choices == linkHistory.userChoices else { return }  // the user took over meanwhile
            await link.choose(speaker.address, name: speaker.name, why: index == 0 ? .lastKnown : .otherKnown)
            // A start-up run again (bluetoothd came back) does not overrule a user's disconnect.
            if await link.connectUnlessHeld() == .connected { return }
            if inputs.link.connected || inputs.link.activity == .heldByUser { return }
        }
        guard let first = known.first, choices == linkHistory.userChoices else { return }
        await link.choose(first.address, name: first.name, why: .lastKnown)
        await link.unreachableAtBoot()
        logger.notice("no known speaker answered; scanning for others")
        // The known speakers stay the reconnect policy's to page: without auto_pick the scan only
        // offers the others to the person, which ends this step as it ended before.
        do { try await scanAndPick(choices: choices) } catch is OperationSkipped {}
    }

    /// Scans; with `auto_pick`, connects the best candidate, unless the user made a choice of
    /// their own since `choices` (then theirs stands).
    func scanAndPick(choices: Int? = nil) async throws {
        let choices = choices ?? linkHistory.userChoices
        if configuration.autoPick { await update(.choosing(.autoPickScanning)) }
        let candidates: [RankedCandidate]
        do { candidates = try await discover() } catch {
            await update(.choosing(.user))
            throw error
        }
        // The user picked (or a speaker came) meanwhile.
        guard !inputs.link.connected, choices == linkHistory.userChoices else {
            if inputs.link.target == nil { await update(.choosing(.user)) }
            return
        }
        if configuration.autoPick, let best = CandidateRanking.autoPick(from: candidates) {
            let sinks = candidates.count(where: \.audioSink)
            let found = sinks == 1 ? "the only candidate" : "the best of \(sinks) candidates"
            logger.info("picked \(best.name) (\(best.address)) from the scan, \(found) (auto_pick)")
            await link.choose(best.address, name: best.name, why: .autoPick)
            guard await link.connectUnlessHeld() == .connected else {
                // The user's own `connect` (or disconnect, or forget) ended the pick's attempt:
                // their choice stands, and start-up did what it was for.
                guard choices == linkHistory.userChoices else { return }
                throw DaemonOperationError.connectFailed(name: best.name)
            }
            return
        }
        await update(.choosing(.user))
        if configuration.autoPick { throw DaemonOperationError.noSpeakerFound }
        // Without auto_pick the pick is the person's: the step did not pick, and nothing failed.
        let sinks = candidates.count(where: \.audioSink)
        throw OperationSkipped("auto_pick is off: \(sinks == 0 ? "no speaker" : sinks == 1 ? "1 speaker" : "\(sinks) speakers") found; "
            + "waiting for you to pick ('composer-cli scan', or 'composer-cli connect ADDRESS')")
    }

    /// The `soundfont` step: once `connectIssued` (if any) resolved, loads the soundfont as a
    /// polite block of the readiness gate (see `StartupScenarios` for why), and ends when it is
    /// loaded or failed. Cancelling the step stops the wait; a load already begun completes and
    /// is kept (the cache hands it to the next play).
    func preloadSoundfontPolitely(after connectIssued: OneShotSignal<Void, Never>?) async throws {
        guard playback != nil else { throw DaemonOperationError.noPlaybackEngine }
        if let connectIssued { _ = try await connectIssued.result().get() }
        let loaded = OneShotSignal<Void, any Error>()
        // Loading a soundfont takes a while by nature (tens to hundreds of ms, seconds for a
        // large font): slow only past the step's own budget.
        gate.runNowOrWhenPolitely(.bus, label: "preload soundfont \(configuration.soundfont)", budget: Self.soundfontBudget) {
            do {
                try await self.loadSoundfont()
                _ = loaded.succeed(())
            } catch {
                _ = loaded.fail(error)
            }
        }
        try await loaded.result().get()
    }

    /// Loads the configured soundfont; the outcome is a readiness input (a missing font is a
    /// reason, logged once with its path).
    func loadSoundfont() async throws {
        guard let playback else { throw DaemonOperationError.noPlaybackEngine }
        let path = configuration.soundfont
        await update(.soundfont(.loading(path: path)))
        do {
            try await playback.preloadSoundfont(path)
            await update(.soundfont(.loaded))
        } catch {
            await update(.soundfont(.failed("\(error)")))
            throw error
        }
    }

    /// The `audioBackend` step: looks at the audio path once (the first state of its follower);
    /// an output that cannot work fails the step with the reason.
    func checkAudioBackend() async throws {
        guard playback != nil else { throw DaemonOperationError.noPlaybackEngine }
        if await features.audioPath?.isFollowing(inputs.link.target) != true {
            await followAudioPath(to: inputs.link.target, waitForFirst: true)
        }
        if let reason = inputs.audioPathReason, !reason.waitingCanSucceed {
            throw DaemonOperationError.notReady(reason)
        }
    }

    /// The `playbackReady` step observes readiness; it never sets it. It ends when the gate
    /// reaches `playbackReady`, or fails with the reason after `playbackReadyWait`.
    func becomePlaybackReady() async throws {
        guard playback != nil else { throw DaemonOperationError.noPlaybackEngine }
        let gate = gate
        let outcome = try await timeboxed(Self.playbackReadyWait, clock: dependencies.clock) { [weak self] () async -> Bool in
            for await level in gate.levels() {
                if level >= .playbackReady { return true }
                // The compatibility gate closed meanwhile: start-up runs again when it reopens.
                guard let self, await !self.compatibilityGateClosed else { return false }
            }
            return false
        }
        if case .finished(true) = outcome { return }
        throw DaemonOperationError.notReady(verdict.waitingFor ?? .starting)
    }

    /// Start-up run again after the compatibility gate reopened, if it was (for tests).
    var rerun: Task<Void, Never>? { startup.rerun }

    /// What loading the soundfont may take before it is reported as slow (the step's timeout).
    static let soundfontBudget = Duration.seconds(10)

    /// How long start-up's last step watches for readiness before it reports the reason.
    static let playbackReadyWait = Duration.seconds(10)
}

/// Why a start-up operation or API call about the speaker failed.
enum DaemonOperationError: Error, CustomStringConvertible {
    case connectFailed(name: String)
    case noSpeakerFound
    case noPlaybackEngine
    case notReady(NotReadyReason)

    var description: String {
        switch self {
        case .connectFailed(let name): "\(name) did not accept the connection"
        case .noSpeakerFound: "no Bluetooth speaker (audio sink) was found nearby"
        case .noPlaybackEngine: "this speakerd has no playback engine"
        case .notReady(let reason): reason.message
        }
    }
}
