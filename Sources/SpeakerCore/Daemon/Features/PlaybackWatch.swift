import PlaybackService
import ServiceLifecycle
import Synchronization

/// The player's changes: the follower of its change stream (a song ended by itself, the queue
/// started the next), each reported into the reducer (`playback(snapshot)`), and what the player
/// last said it is doing, from that stream or in answer to a request.
///
/// The last snapshot is read where the reducer computes its phase, at once, so it sits behind a
/// lock rather than an actor hop. Winding down stops the follower.
final class PlaybackWatch: DaemonFeature {
    private let said = Mutex(PlaybackSnapshot.idle)
    private let changes: EventFollower

    init(inbox: FeatureInbox) {
        changes = EventFollower(inbox: inbox)
    }

    func stop() async {
        await changes.stop()
    }

    /// What the player last said it is doing.
    var last: PlaybackSnapshot { said.withLock { $0 } }

    /// The player said `snapshot` (its change stream, or the answer to a request).
    func heard(_ snapshot: PlaybackSnapshot) {
        said.withLock { $0 = snapshot }
    }

    /// Follows `playback`'s changes from now on (once), reporting each to the reducer.
    func follow(_ playback: any DaemonPlayback) async {
        guard await !changes.isFollowing else { return }
        await changes.follow(await playback.changes()) { .playback($0) }
    }
}
