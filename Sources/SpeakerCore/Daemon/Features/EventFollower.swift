/// The follower of one stream of events, reporting each into the reducer: BlueZ's events (for
/// ``BlueZWatch``), the player's changes (for ``PlaybackWatch``). One stream at a time, followed
/// from the first `follow` until its feature stops it as the daemon winds down.
actor EventFollower {
    private var follower: Task<Void, Never>?
    private var stopped = false
    private let inbox: FeatureInbox

    init(inbox: FeatureInbox) {
        self.inbox = inbox
    }

    func stop() {
        stopped = true
        follower?.cancel()
        follower = nil
    }

    /// Whether a stream is followed.
    var isFollowing: Bool { follower != nil }

    /// Follows `events` (unless a stream is followed already), reporting each as `report` makes it.
    func follow<Events: AsyncSequence & Sendable>(_ events: Events, as report: @escaping @Sendable (Events.Element) -> FeatureReport)
    where Events.Element: Sendable {
        guard follower == nil, !stopped else { return }
        let inbox = inbox
        follower = Task {
            do {
                for try await event in events { await inbox.send(report(event)) }
            } catch {
                // The stream failed: nothing more comes from it (the BlueZ client says so itself).
            }
        }
    }
}
