import BlueZ
import ServiceLifecycle
import Synchronization

/// The BlueZ watch: the client the daemon made (start-up's `bluez` step), the adapter start-up
/// chose for it (the `adapter` step), and the follower of BlueZ's events, each reported into the
/// reducer (`bluez(event)`).
///
/// The reducer decides what an event means (the adapter or bluetoothd gone closes the
/// compatibility gate: it lets go of the adapter here); the watch only keeps what is in use. The
/// client and the adapter are read where the reducer needs them at once (an event naming the
/// adapter, a scan's place, a request), so they sit behind a lock rather than an actor hop.
/// Winding down stops the follower; the client itself is ended last of all (`close`), once
/// everything that talks to BlueZ has stopped.
final class BlueZWatch: DaemonFeature {
    private let inUse = Mutex<(client: (any BlueZClient)?, adapter: Adapter?)>((nil, nil))
    private let events: EventFollower

    init(inbox: FeatureInbox) {
        events = EventFollower(inbox: inbox)
    }

    func stop() async {
        await events.stop()
    }

    /// The BlueZ client, once start-up has made it.
    var client: (any BlueZClient)? { inUse.withLock { $0.client } }

    /// The adapter speakerd uses, from start-up's adapter step until it or bluetoothd goes.
    var adapter: Adapter? { inUse.withLock { $0.adapter } }

    /// Keeps `client` (the one the daemon made) from now on.
    func keep(_ client: any BlueZClient) {
        inUse.withLock { $0.client = client }
    }

    /// Follows the client's events from now on (once), reporting each to the reducer.
    func followEvents() async {
        guard let client else { return }
        await events.follow(client.events()) { .bluez($0) }
    }

    /// Uses `adapter` from now on (start-up's adapter step chose it).
    func use(_ adapter: Adapter) {
        inUse.withLock { $0.adapter = adapter }
    }

    /// The adapter (or bluetoothd) went away: none is in use until start-up chooses one again.
    func adapterGone() {
        inUse.withLock { $0.adapter = nil }
    }

    /// Ends the client the daemon made: stops a discovery the adapter was seen running, then its
    /// signal pump and RSSI coalescer, which would otherwise wait on their streams (and keep the
    /// client) for ever.
    func close() async {
        let (client, adapter) = inUse.withLock { ($0.client, $0.adapter) }
        if let client, let adapter, adapter.discovering, let address = adapter.address {
            try? await client.stopDiscovery(on: address)
        }
        await client?.shutDown()
    }
}
