import PlaybackService
import SpeakerdAPI
/// Following playback: when a song ends by itself (or the queue starts the next one) the status
/// line and the PlaybackChanged signal say so, instead of "Playing X" lingering after the end.
extension SpeakerdDaemon {
    func watchPlayback() async {
        guard let playback, await !features.playbackChanges.isFollowing else { return }
        await features.playbackChanges.follow(await playback.changes()) { .playback($0) }
    }

    func playbackChanged(_ snapshot: PlaybackSnapshot) async {
        guard lifecycle != .stopping, lifecycle != .stopped else { return }
        playbackSnapshot = snapshot
        await publish()
    }
}
