import BlueZ
/// What the speaker link's owner (``SpeakerLink``) knows at one moment: which speaker it keeps
/// connected and why, whether BlueZ says that speaker is connected, and what the owner is doing
/// about it. Readiness and the status line are computed from it.
public struct LinkSnapshot: Equatable, Sendable {
    /// Why this speaker is the target.
    public enum Why: String, Equatable, Sendable {
        /// The most recently connected known speaker, at start-up.
        case lastKnown
        /// Another known speaker, tried because the last one did not answer.
        case otherKnown
        /// The user asked for it (`composer-cli connect`).
        case userPick
        /// Scan-and-pick chose it (`auto_pick = yes`).
        case autoPick
        /// It connected to us by itself (a known speaker switched on).
        case inbound
    }

    public struct Target: Equatable, Sendable {
        public var address: BluetoothAddress
        public var name: String
        public var why: Why

        public init(address: BluetoothAddress, name: String, why: Why) {
            self.address = address
            self.name = name
            self.why = why
        }
    }

    /// What the owner is doing about a target that is not connected.
    public enum Activity: Equatable, Sendable {
        /// Nothing under way (no target, or connected).
        case idle
        case connecting
        /// Backing off: the next attempt is due in this long (nil: when the speaker shows up).
        case retrying(in: Duration?)
        /// The user disconnected it: nothing happens until they ask.
        case heldByUser
        /// It would not pair (BlueZ's reason): nothing happens until the user asks again.
        case needsPairing(reason: String)
        /// The machine is asleep.
        case asleep
    }

    public var target: Target?
    /// BlueZ says the target is connected (its signal, or our own `Connect` returning).
    public var connected: Bool
    /// BlueZ's `ServicesResolved` for the target, where BlueZ gives it: nil until this speaker
    /// has once been seen with its services resolved (python-dbusmock's stock template, and
    /// BlueZ before a first full connection, never say), then whether they are now. A connected
    /// link whose services are still being resolved cannot carry audio yet.
    public var servicesResolved: Bool?
    public var activity: Activity
    /// Counts the owner's changes, so an observer that handles them concurrently can tell a
    /// late report of an older state from the newest one.
    public var revision = 0

    public init(target: Target? = nil, connected: Bool = false, activity: Activity = .idle, servicesResolved: Bool? = nil) {
        self.target = target
        self.connected = connected
        self.activity = activity
        self.servicesResolved = servicesResolved
    }

    /// Connected, and (where BlueZ says) with the speaker's services resolved.
    public var ready: Bool { connected && servicesResolved != false }

    public static let none = LinkSnapshot()
}
