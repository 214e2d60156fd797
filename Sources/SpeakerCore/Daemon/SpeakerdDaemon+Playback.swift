import PlaybackService
import SpeakerdAPI
/// Following playback: when a song ends by itself (or the queue starts the next one) the status
/// line and the PlaybackChanged signal say so, instead of "Playing X" lingering after the end.
extension SpeakerdDaemon {
    func watchPlayback() async {
        guard let playback else { return }
        await features.playbackChanges.follow(playback)
    }

    func playbackChanged(_ snapshot: PlaybackSnapshot) async {
        await run(.playback(snapshot))
    }
}
