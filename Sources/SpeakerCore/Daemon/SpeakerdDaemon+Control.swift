#if canImport(FoundationEssentials)
import BlueZ
import FoundationEssentials
import SpeakerdAPI
#else
import Foundation
#endif
import AsyncSignals
import Playback
import PlaybackService

/// speakerd's API: what `composer-cli` asks, answered from the coordinator's state.
extension SpeakerdDaemon: SpeakerdControl {
    public func status() async throws(SpeakerdError) -> StatusReport { await currentStatus() }

    public func startup() async throws(SpeakerdError) -> StartupReport {
        let outputChoice = await features.audioPath?.notes.automaticChoice?.description
        guard let report = startup.record.report(outputChoice: outputChoice) else {
            throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: "start-up is still running; ask again in a moment")
        }
        return report
    }

    public func scan() async throws(SpeakerdError) -> ScanReport {
        try await scan(duration: nil)
    }

    public func scan(seconds: Int) async throws(SpeakerdError) -> ScanReport {
        if let problem = ScanLength.problem(seconds) {
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: problem)
        }
        return try await scan(duration: .seconds(seconds))
    }

    private func scan(duration: Duration?) async throws(SpeakerdError) -> ScanReport {
        // The request that started speakerd (D-Bus activation) waits for start-up's adapter.
        _ = try await bluezOnceReachable()
        let candidates: [RankedCandidate]
        do {
            candidates = try await discover(duration: duration)
        } catch let error as SpeakerdError {
            throw error
        } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "scan failed: \(error)")
        }
        return CandidateRanking.report(candidates)
    }

    public func speakers() async throws(SpeakerdError) -> SpeakersReport {
        let formatter = Date.ISO8601FormatStyle()  // 2026-11-21T14:53:03Z, UTC
        let connected = inputs.link.connected ? inputs.link.target?.address : nil
        return SpeakersReport(speakers: await stateStore.knownSpeakers.map {
            .init(address: $0.address.description, name: $0.name, connected: $0.address == connected,
                  lastConnected: formatter.format($0.lastConnected))
        })
    }

    public func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport {
        try await connect(address, force: false)
    }

    public func connect(_ address: BluetoothAddress?, force: Bool) async throws(SpeakerdError) -> StatusReport {
        let asked = linkHistory.userChoices
        let bluez = try await bluezOnceReachable()
        // A later choice by the user (disconnect, forget, another connect) wins over a connect
        // still waiting here.
        guard asked == linkHistory.userChoices else {
            throw .rejected(name: SpeakerdBus.ErrorName.failed,
                            message: "a later 'connect', 'disconnect' or 'forget' replaced this connect request")
        }
        let known = await stateStore.knownSpeakers
        guard let chosen = address ?? inputs.link.target?.address ?? known.first?.address else {
            throw .rejected(name: SpeakerdBus.ErrorName.noSpeaker,
                            message: "no speaker known yet: run 'composer-cli scan', then 'composer-cli connect ADDRESS'")
        }
        let device: Device?
        do { device = try await bluez.device(chosen) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "\(error)")
        }
        guard let device else {
            throw .rejected(name: SpeakerdBus.ErrorName.unknownDevice,
                            message: "BlueZ does not know \(chosen): put the speaker in pairing mode and run 'composer-cli scan'")
        }
        let name = known.first { $0.address == chosen }?.name ?? device.displayName
        // BlueZ says it is something else (a phone, a keyboard): not what a person meant, unless
        // they say so. A device BlueZ knows nothing about yet is given the benefit of the doubt.
        if !force, case .notAudioSink(let why) = device.audioSink, !known.contains(where: { $0.address == chosen }) {
            throw .rejected(name: SpeakerdBus.ErrorName.notASpeaker,
                            message: "\(name) (\(chosen)) is not a speaker: \(why); 'composer-cli connect --force \(chosen)' connects it anyway")
        }
        guard asked == linkHistory.userChoices else {
            throw .rejected(name: SpeakerdBus.ErrorName.failed,
                            message: "a later 'connect', 'disconnect' or 'forget' replaced this connect request")
        }
        await run(.userChose)
        await link.choose(chosen, name: name, why: .userPick)
        switch await link.connectNow() {
        case .connected:
            break
        case .failed(let reason):
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "\(name) (\(chosen)) did not connect: \(reason)")
        case .pairingRefused(let why):
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth,
                            message: "\(name) (\(chosen)) did not connect: pairing failed (\(why)); put it in pairing mode and run this again")
        }
        return await currentStatus()
    }

    /// The BlueZ client once start-up has reached the adapter. A request that arrives first
    /// (the one that started speakerd by D-Bus activation) waits for it, or fails with the
    /// reason the adapter cannot be reached.
    func bluezOnceReachable() async throws(SpeakerdError) -> any BlueZClient {
        if !gate.isReached(.adapter), !compatibilityGateClosed {
            try? await gate.wait(for: .adapter, timeout: Self.requestWaitForAdapter)
        }
        guard let bluez = features.bluez.client, gate.isReached(.adapter) else {
            throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: phase.statusLine)
        }
        return bluez
    }

    var compatibilityGateClosed: Bool {
        if case .blocked = lifecycle { true } else { false }
    }

    /// How long a request that needs the adapter waits for start-up to reach it.
    static let requestWaitForAdapter = Duration.seconds(15)

    public func disconnect() async throws(SpeakerdError) -> StatusReport {
        await run(.userChose)
        guard let target = inputs.link.target else {
            throw .rejected(name: SpeakerdBus.ErrorName.noSpeaker, message: "no speaker is connected, so there is nothing to disconnect")
        }
        // Asked of the link itself, not of `inputs.link`: a `connect` just given lifts the hold
        // at once, but the reducer hears of the attempt only when the link next reports, and a
        // disconnect in between must still end that attempt (DisconnectDuringConnectTests).
        let held = await link.isHeldByUser
        guard await link.snapshot.connected || !held else {
            throw .rejected(name: SpeakerdBus.ErrorName.noSpeaker,
                            message: "\(target.name) is already disconnected; 'composer-cli connect' reconnects it")
        }
        await playback?.stop()
        do { try await link.userDisconnect() } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.bluetooth, message: "disconnecting \(target.name) failed: \(error)")
        }
        logger.info("disconnected \(target.name) (\(target.address)) as asked")
        return await currentStatus()
    }

    public func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport {
        try await forget(address, keepPairing: false)
    }

    public func forget(_ address: BluetoothAddress, keepPairing: Bool) async throws(SpeakerdError) -> SpeakersReport {
        await run(.userChose)
        if await link.forget(address) { try? await features.bluez.client?.disconnect(address) }
        let removed: Bool
        do { removed = try await stateStore.forget(address) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "\(error)")
        }
        guard removed else {
            throw .rejected(name: SpeakerdBus.ErrorName.unknownDevice, message: "\(address) is not a known speaker")
        }
        if keepPairing {
            logger.info("forgot \(address); BlueZ keeps its pairing, as asked")
        } else {
            // Forgetting means the speaker must pair again: BlueZ forgets it too. Said, not silent.
            do {
                if let bluez = features.bluez.client {
                    try await operations.perform("remove the pairing of \(address)", group: "forget", timeout: .seconds(10)) {
                        try await bluez.removeDevice(address)
                    }
                }
            } catch {
                logger.notice("forgot \(address), but BlueZ could not remove its pairing: \(error)")
            }
            logger.info("forgot \(address) and removed its BlueZ pairing")
        }
        return try await speakers()
    }

    /// Plays the song in `request`, taking ownership of `request.file`: it is closed whatever
    /// happens, so an in-process caller must not close it too (the number may be reused by then).
    /// The D-Bus object hands over a duplicate of the descriptor the client sent.
    ///
    /// A request waits for readiness only while waiting can succeed; otherwise it fails at once
    /// with the reason and what to do (after one more look at what a person may have fixed
    /// since: the soundfont installed, the output directory made writable).
    public func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        guard let playback = playback else {
            try? request.file.close()
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: DaemonOperationError.noPlaybackEngine.description)
        }
        // What a person may have fixed since the reason was found is looked at once more, so the
        // player's "waiting cannot succeed" is current. The player reads and checks the song first
        // (a broken file fails at once), then waits in the readiness gate for at most the play timeout.
        if let reason = verdict.waitingFor, !reason.waitingCanSucceed { await lookAgainBeforePlaying() }
        // A speaker out of reach is tried now, and every few seconds while this request waits,
        // rather than after a backoff that may outlast the play timeout.
        await link.requestWaiting()
        let snapshot: PlaybackSnapshot
        do {
            snapshot = try await playback.play(request)
        } catch {
            await link.requestEnded()
            logger.info("not playing \(request.displayName)\(speakerForLog): \(error)")
            throw Self.rejected(error)
        }
        await link.requestEnded()
        // The player says "playing" when the song starts (a queued one later, or never).
        // A queued song leaves the status line on the one playing now.
        await playbackChanged(snapshot)
        return await currentStatus()
    }

    /// " on JBL Flip 5 (11:22:…)" for a log line about a song, or nothing with no speaker chosen.
    var speakerForLog: String {
        inputs.link.target.map { " on \($0.name) (\($0.address))" } ?? ""
    }

    /// What a person may have fixed without telling speakerd: a soundfont installed, an output
    /// directory made writable, a sound server started. Looked at again before a `play`.
    func lookAgainBeforePlaying() async {
        if case .failed = inputs.soundfont { try? await loadSoundfont() }
        if let reason = inputs.audioPathReason, !reason.waitingCanSucceed {
            await followAudioPath(to: inputs.link.target, waitForFirst: true)
        }
    }

    /// A playback failure as the API reports it: the one place its error name is chosen.
    static func rejected(_ error: PlaybackServiceError) -> SpeakerdError {
        let name = switch error {
        case .invalidSong, .songTooLarge: SpeakerdBus.ErrorName.invalidFile
        case .controlRefused: SpeakerdBus.ErrorName.invalidControl
        case .busy: SpeakerdBus.ErrorName.busy
        case .notReady, .cannotWait, .notStartedYet: SpeakerdBus.ErrorName.notReady
        case .replaced, .stoppedBeforeStart, .cancelled, .startFailed, .nothingPlaying, .shuttingDown:
            SpeakerdBus.ErrorName.failed
        }
        return .rejected(name: name, message: error.description)
    }

    public func stop() async throws(SpeakerdError) -> StatusReport {
        if let playback { features.playbackChanges.heard(await playback.stop()) }
        return await publish()
    }

    public func pause() async throws(SpeakerdError) -> StatusReport {
        if let playback {
            do { let said = try await playback.pause(); features.playbackChanges.heard(said) } catch { throw Self.rejected(error) }
        }
        return await publish()
    }

    public func resume() async throws(SpeakerdError) -> StatusReport {
        if let playback {
            do { let said = try await playback.resume(); features.playbackChanges.heard(said) } catch { throw Self.rejected(error) }
        }
        return await publish()
    }

    public func skip() async throws(SpeakerdError) -> StatusReport {
        if let playback {
            do { let said = try await playback.skip(); features.playbackChanges.heard(said) } catch { throw Self.rejected(error) }
        }
        return await publish()
    }

    /// A composer's control on the playing song, read here whoever sent it.
    public func adjust(_ request: LiveControlRequest) async throws(SpeakerdError) -> StatusReport {
        let control: LiveControl
        do { control = try LiveControl(name: request.name, value: request.value) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.invalidControl, message: error.description)
        }
        guard let playback else { throw Self.rejected(.nothingPlaying(operation: control.name)) }
        do { let said = try await playback.adjust(control); features.playbackChanges.heard(said) } catch { throw Self.rejected(error) }
        return await publish()
    }

    public func clearQueue() async throws(SpeakerdError) -> StatusReport {
        if let playback { features.playbackChanges.heard(await playback.clearQueue()) }
        return await publish()
    }
}

extension SpeakerdDaemon: SpeakerdRequestLimitsSource {
    public nonisolated var requestLimits: SpeakerdRequestLimits { configuration.requestLimits }
}
