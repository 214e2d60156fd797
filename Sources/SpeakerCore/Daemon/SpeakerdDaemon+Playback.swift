import PlaybackService
import SpeakerdAPI
/// Following playback: when a song ends by itself (or the queue starts the next one) the status
/// line and the PlaybackChanged signal say so, instead of "Playing X" lingering after the end.
extension SpeakerdDaemon {
    func watchPlayback() async {
        guard playbackWatcher == nil, let playback else { return }
        let changes = await playback.changes()
        playbackWatcher = Task { [weak self] in
            for await snapshot in changes {
                await self?.playbackChanged(snapshot)
            }
        }
    }

    func playbackChanged(_ snapshot: PlaybackSnapshot) async {
        guard lifecycle != .stopping, lifecycle != .stopped else { return }
        playbackSnapshot = snapshot
        await publish()
    }
}
