import AudioPath
import PlaybackService
import SpeakerdAPI
import Systemd
/// Publishing: the phase (computed), `STATUS=` for systemd, and the API's properties and signals.
extension SpeakerdDaemon {
    /// The status line's value, from the verdict and what playback is doing.
    var phase: DaemonPhase {
        if lifecycle == .stopping || lifecycle == .stopped { return .stopping }
        // A daemon without playback (in-process tests) is as ready as it can be once connected.
        if inputs.soundfont == .noEngine, inputs.link.connected, let target = inputs.link.target, verdict.level >= .speakerConnected {
            return .ready(speakerName: target.name)
        }
        guard verdict.level == .playbackReady, let target = inputs.link.target else {
            return .notReady(verdict.waitingFor ?? .starting)
        }
        let playbackSnapshot = features.playbackChanges.last
        switch (playbackSnapshot.activity, playbackSnapshot.file) {
        case (.playing, let file?): return .playing(file: file, speakerName: target.name)
        case (.paused, let file?): return .paused(file: file, speakerName: target.name)
        default: return .ready(speakerName: target.name)
        }
    }

    func currentStatus() async -> StatusReport {
        let playback = StatusReport.Playback(await playback?.snapshot() ?? .idle)
        // No link outlives bluetoothd or the adapter: once they are gone the speaker is not shown
        // connected, even before the link's own report of the loss has arrived.
        let blocked = if case .blocked = inputs.bluetooth { true } else { false }
        let linked = inputs.link.connected && !blocked
        let speaker = inputs.link.target.map {
            StatusReport.Speaker(address: $0.address.description, name: $0.name, connected: linked)
        }
        let reason = await reasonAsOfNow()
        let waitingFor = reason.map { StatusReport.WaitingFor(code: $0.code.rawValue, message: $0.message) }
        let route: AudioRoute? = if case .ready(let route) = inputs.audioPath { route } else { nil }
        // What the features show beside the verdict: the state file's problem, the speaker care's
        // note and volume, the path's warnings and `auto` choice.
        let stateProblem = await features.stateFile.problem
        let profileNote = await features.speakerCare.profileNote(onLink: linkHistory.linkUps)
        let notes = await features.audioPath?.notes
        let volume = await statusVolume()
        var message = phase.statusLine
        if case .notReady(let shown) = phase, shown.code == .speakerUnreachable, let reason { message = reason.sentence }
        return StatusReport(readiness: verdict.level.description, message: message, speaker: speaker,
                            playback: playback, waitingFor: waitingFor,
                            warnings: [stateProblem, profileNote].compactMap { $0 } + (notes?.warnings ?? []),
                            audioPath: route?.description, audioSampleRateHz: route?.sampleRate, outputChoice: notes?.automaticChoice?.description,
                            volume: volume)
    }

    /// The verdict's reason as of now: while the speaker is out of reach, the time to the next
    /// try is counted down when asked, not frozen at the moment the retry was armed (a status
    /// asked 20 s later said "retrying in 34 s" still).
    func reasonAsOfNow() async -> NotReadyReason? {
        guard let reason = verdict.waitingFor, reason.code == .speakerUnreachable, let name = inputs.link.target?.name,
              case .waiting(_, _, let retryAt)? = await link.reconnectState else { return verdict.waitingFor }
        return .unreachable(name, retryIn: clock.now.duration(to: retryAt))
    }

    /// Tells systemd and the bus what changed (only what changed); returns the status it published.
    @discardableResult
    func publish() async -> StatusReport {
        let status = await currentStatus()
        await features.bus.publish(status)
        return status
    }
}
