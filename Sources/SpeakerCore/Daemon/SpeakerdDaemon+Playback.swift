/// Following playback: when a song ends by itself (or the queue starts the next one) the status
/// line and the PlaybackChanged signal say so, instead of "Playing X" lingering after the end.
extension SpeakerdDaemon {
    func watchPlayback() async {
        guard playbackWatcher == nil, let playback else { return }
        let changes = await playback.changes()
        playbackWatcher = Task { [weak self] in
            for await report in changes {
                await self?.playbackChanged(report)
            }
        }
    }

    func playbackChanged(_ report: StatusReport.Playback) async {
        guard let target, lifecycle != .stopping, lifecycle != .stopped else { return }
        switch (report.state, phase) {
        case ("playing", _), ("paused", _):
            if let file = report.file { phase = .playing(file: file, speakerName: target.name) }
        case (_, .playing):
            phase = gate.isReached(.playbackReady) ? .ready(speakerName: target.name) : .connecting(speakerName: target.name)
        default:
            break
        }
        await publish()
    }
}
