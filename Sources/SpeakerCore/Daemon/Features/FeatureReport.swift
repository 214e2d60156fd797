import AudioPath
import BlueZ
import PlaybackService
import Synchronization

/// What a feature tells the daemon's reducer. Each case is an observation; the reducer decides
/// what follows from it (readiness, the status, the link).
enum FeatureReport: Sendable {
    /// The audio path to the followed speaker is in a new state. The player already has the
    /// route (see ``AudioPathFeature``); `subscription` says which follow it came from, so the
    /// reducer takes no late report of a path it no longer follows.
    case audioPath(AudioPathState, subscription: Int)
    /// Something `status` shows from a feature changed (a warning, a note, the volume).
    case statusChanged
    /// logind's `PrepareForSleep`: the machine is going to sleep (true) or woke up.
    case systemSleep(starting: Bool)
    /// Our bus connection dropped without us closing it.
    case busLost
    /// An event from BlueZ (the BlueZ watch).
    case bluez(BlueZEvent)
    /// What the player says it is doing now (a song ended by itself, the queue started the next).
    case playback(PlaybackSnapshot)
}

/// The one channel every feature reports through.
///
/// `send` returns once the reducer has taken the report in, so a feature's next step sees the
/// world its report made (a follower's next report never overtakes its last, and start-up's
/// "wait for the path's first state" means the reducer has it). Reports sent before the daemon
/// connects the inbox, or after it is gone, go nowhere.
final class FeatureInbox: Sendable {
    typealias Reducer = @Sendable (FeatureReport) async -> Void
    private let reducer = Mutex<Reducer?>(nil)

    init() {}

    func connect(_ reducer: @escaping Reducer) {
        self.reducer.withLock { $0 = reducer }
    }

    func send(_ report: FeatureReport) async {
        guard let reducer = reducer.withLock({ $0 }) else { return }
        await reducer(report)
    }
}
