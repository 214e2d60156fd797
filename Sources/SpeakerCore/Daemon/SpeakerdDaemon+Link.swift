import AsyncSignals
import AudioPath
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlaybackService

/// Following the speaker link and the audio path to it, and remembering connected speakers.
extension SpeakerdDaemon {
    /// The link's owner reports a change: readiness follows it, whoever asked for what.
    func linkChanged(_ snapshot: LinkSnapshot) async {
        let previous = inputs.link
        guard snapshot.revision > previous.revision else { return }  // a late report of an older state
        let target = snapshot.target
        let cameUp = snapshot.connected && !(previous.connected && previous.target?.address == target?.address)
        // Said before what follows from it (ready to play), as it happened.
        if cameUp, let target {
            if let last = lastLinkUp, last.target == target, last.choices == userChoices {
                logger.info("reconnected to \(target.name) (\(target.address))")
            } else {
                logger.info("connected to \(target.name) (\(target.address)), \(target.why.spoken)")
            }
            lastLinkUp = (target, userChoices)
        }
        // The input and the link count change before anything here suspends, so a newer report
        // handled meanwhile is never overwritten by this one, and what runs meanwhile (the
        // audio path's report arming the profile timer) already counts this link.
        if cameUp {
            linkUps += 1
            profileNote = nil
        }
        await update { $0.link = snapshot }
        if target?.address != audioPathTarget?.address || target?.name != audioPathTarget?.name {
            await followAudioPath(to: target, waitForFirst: false)
        }
        considerAskingForProfile()
        if cameUp, let target {
            await remember(target)
            await publish()
        }
        // After `remember`: a speaker's first link finds it known, to keep its first volume.
        considerRestoringVolume()
    }

    /// Starts following the audio path to `target` (replacing any earlier follower). With
    /// `waitForFirst`, returns once its first state is known (the start-up step's check).
    func followAudioPath(to target: LinkSnapshot.Target?, waitForFirst: Bool) async {
        audioPathFollower?.cancel()
        audioPathTarget = target
        audioPathGeneration += 1
        guard let playback, !isWindingDown else { return }
        let generation = audioPathGeneration
        // Songs from now on are for the new target; no route to it is known until its path says.
        audioPathNotes = (nil, [])
        await playback.routeChanged(to: target?.speaker, route: nil)
        let reports = audio.paths(to: target?.speaker, over: connection)
        let first = OneShotSignal<Void, Never>()
        audioPathFollower = Task { [weak self] in
            for await report in reports {
                await self?.audioPathChanged(report, generation: generation)
                first.succeed(())
            }
            first.succeed(())
        }
        // What was seen of the old target's path no longer holds until the new follower says,
        // except a problem with the output or the sound server itself: it is no less true for
        // another speaker, and hiding it (status flickering to "Connecting…") would let a `play`
        // wait instead of failing at once.
        if !inputs.audioPath.holdsForAnySpeaker { await update { $0.audioPath = .unknown } }
        if waitForFirst { _ = try? await first.result() }
    }

    /// The path's report: the player gets the route first, so a song the new verdict lets start
    /// opens its output on the route that made the path ready.
    func audioPathChanged(_ report: AudioPathReport, generation: Int) async {
        guard generation == audioPathGeneration else { return }
        audioPathNotes = (report.automaticChoice, report.warnings)
        await playback?.routeChanged(to: audioPathTarget?.speaker, route: report.state.route)
        guard generation == audioPathGeneration else { return }
        await update { $0.audioPath = report.state }
        considerAskingForProfile()
        considerRestoringVolume()
    }

    /// Remembers a connected speaker; a state directory that cannot be written is a status
    /// condition (never only a log line), and the write is tried again until it works.
    func remember(_ target: LinkSnapshot.Target) async {
        // Whether it is new decides its first volume (`+Volume`); asked before recording, so a
        // state directory that cannot be written does not make every speaker look new.
        if await !stateStore.knownSpeakers.contains(where: { $0.address == target.address }) {
            newSpeakers.insert(target.address)
        }
        defer { rememberedOnLink = linkUps }
        do {
            try await stateStore.recordConnection(to: target.address, name: target.name, at: dependencies.now())
            stateWritten()
        } catch {
            stateWriteFailed(error)
        }
    }

    func stateWritten() {
        if stateProblem != nil { logger.notice("state directory writable again: known speakers are saved") }
        stateProblem = nil
        stateRetry?.cancel()
        stateRetry = nil
    }

    func stateWriteFailed(_ error: StateStoreError) {
        let problem = "speakers will not be remembered: \(error)"
        if problem != stateProblem { logger.error("\(problem)") }
        stateProblem = problem
        // A write that fails while shutting down (a link change handled during the shutdown's
        // awaits) arms no retry: it would sleep on behind the stopped daemon.
        guard stateRetry == nil, !isWindingDown else { return }
        let clock = dependencies.clock
        stateRetry = Task { [weak self] in
            var delay = Duration.seconds(5)
            while !Task.isCancelled {
                do { try await clock.sleep(for: delay) } catch { return }
                guard let self else { return }
                if await self.retryStateWrite() { return }
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// One retry of a failed state write; true once nothing is left to write.
    func retryStateWrite() async -> Bool {
        do {
            try await stateStore.savePending()
            stateRetry = nil
            stateWritten()
            await publish()
            return true
        } catch {
            stateProblem = "speakers will not be remembered: \(error)"
            return false
        }
    }
}

extension LinkSnapshot.Why {
    /// For the log line: why this speaker was connected.
    var spoken: String {
        switch self {
        case .lastKnown: "the last known speaker"
        case .otherKnown: "another known speaker"
        case .userPick: "as you asked"
        case .autoPick: "picked by scan (auto_pick)"
        case .inbound: "it connected by itself"
        }
    }
}
