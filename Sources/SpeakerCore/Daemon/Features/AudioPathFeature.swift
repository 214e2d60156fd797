import AsyncSignals
import AudioPath
import DBus
import PlaybackService
import ServiceLifecycle
import Synchronization

/// The audio path to the target speaker: follows the configured ``AudioBackend``'s path, hands
/// each route to the player, and reports the path's state to the reducer.
///
/// The player gets the route *before* the reducer hears the state, so a song the new verdict
/// lets start opens its output on the route that made the path ready. One follower at a time:
/// following another target (or the same one again, after a fix) replaces the follower, and
/// each follow is a new subscription, numbered here when the reducer asks for it
/// (`numberFollow`), so the reducer can tell a late report of a replaced follower from the
/// current one (`isLatest`). Beside the state, the feature keeps what `status` shows
/// with it: the `auto` choice and the warnings of the last report.
actor AudioPathFeature: DaemonFeature {
    /// The speaker whose path is followed, and whether a follower runs.
    private(set) var target: LinkSnapshot.Target?
    private var follower: Task<Void, Never>?
    /// The current subscription: the number of the follow this actor runs now.
    private(set) var subscription = 0
    /// The follows numbered so far. The reducer takes a number before it asks for the follow,
    /// so a report of an older follow still on its way to it is dropped even before this actor
    /// has run the new follow.
    private nonisolated let numbered = Mutex(0)
    /// What the path's last report says beside its state (the state is the reducer's input).
    private(set) var notes: (automaticChoice: AutomaticOutput?, warnings: [String]) = (nil, [])
    private var stopped = false
    nonisolated let backend: any AudioBackend
    private let playback: any DaemonPlayback
    private let inbox: FeatureInbox

    init(backend: any AudioBackend, playback: any DaemonPlayback, inbox: FeatureInbox) {
        self.backend = backend
        self.playback = playback
        self.inbox = inbox
    }

    func stop() {
        stopped = true
        follower?.cancel()
        follower = nil
    }

    /// Numbers a new follow: from now on, only its reports count (`isLatest`).
    nonisolated func numberFollow() -> Int {
        numbered.withLock { count in
            count += 1
            return count
        }
    }

    /// Whether `subscription` is the follow numbered last (a report of any other is late).
    nonisolated func isLatest(_ subscription: Int) -> Bool {
        numbered.withLock { $0 == subscription }
    }

    /// Whether the path to `target` is being followed now.
    func isFollowing(_ target: LinkSnapshot.Target?) -> Bool {
        follower != nil && self.target?.address == target?.address
    }

    /// Starts following the path to `target` as subscription `subscription` (numbered by
    /// `numberFollow`), replacing any earlier follower; returns a signal resolved once the first
    /// report has been taken in by the reducer (nil when winding down: nothing is followed).
    func follow(_ target: LinkSnapshot.Target?, over connection: DBusConnection?, as subscription: Int) async
        -> OneShotSignal<Void, Never>? {
        follower?.cancel()
        follower = nil
        self.target = target
        self.subscription = subscription
        guard !stopped else { return nil }
        // Songs from now on are for the new target; no route to it is known until its path says.
        notes = (nil, [])
        await playback.routeChanged(to: target?.speaker, route: nil)
        // A newer follow (or the end) came while the player heard of this one: it stands.
        guard subscription == self.subscription, !stopped else { return nil }
        let reports = backend.paths(to: target?.speaker, over: connection)
        let first = OneShotSignal<Void, Never>()
        follower = Task { [weak self] in
            for await report in reports {
                await self?.forward(report, subscription: subscription)
                first.succeed(())
            }
            first.succeed(())
        }
        return first
    }

    /// A report of subscription `subscription`: the player gets the route, then the reducer the state.
    private func forward(_ report: AudioPathReport, subscription: Int) async {
        guard subscription == self.subscription else { return }
        notes = (report.automaticChoice, report.warnings)
        await playback.routeChanged(to: target?.speaker, route: report.state.route)
        guard subscription == self.subscription else { return }
        await inbox.send(.audioPath(report.state, subscription: subscription))
    }
}
