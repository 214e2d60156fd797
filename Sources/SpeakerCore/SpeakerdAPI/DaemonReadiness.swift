/// How far speakerd has come towards playing audio, in the order start-up reaches them.
///
/// The readiness gate (module Readiness) is generic over its levels and knows nothing of
/// speakers; these are the daemon's levels. Work that needs the speaker (a `play` request) waits
/// for `.playbackReady`; work that needs only the bus (the D-Bus API) waits for `.bus`. When the
/// speaker is lost the daemon drops back to `.adapter`, and everything registered meanwhile runs
/// when it comes back.
///
/// It lives in the API because it is on the wire: the raw value is the stable name printed by
/// `composer-cli status --json` (`readiness`) and published as the D-Bus `Readiness` property,
/// and ``spoken`` is status's `Readiness:` line. The daemon and the player gate work on it; both
/// sit above this module. The raw values are names, so the order lives in ``rank``.
///
/// ``rank`` and `<` are `@inlinable`: the gate's hot paths are specialised in the modules that
/// use it, and comparing two levels there should not be a call into this module.
public enum DaemonReadiness: String, Comparable, CaseIterable, Sendable, Codable, CustomStringConvertible {
    /// The process runs and has read its configuration.
    case started
    /// The D-Bus connection is up and our name is owned.
    case bus
    /// BlueZ answers and an adapter is powered.
    case adapter
    /// A speaker is connected.
    case speakerConnected
    /// The audio path to the speaker exists (e.g. BlueALSA's PCM) and the synthesiser is loaded.
    case playbackReady

    /// Position in start-up order, lowest first.
    @inlinable
    public var rank: Int {
        switch self {
        case .started: 0
        case .bus: 1
        case .adapter: 2
        case .speakerConnected: 3
        case .playbackReady: 4
        }
    }

    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

    public var description: String { rawValue }

    /// What reaching the next level waits for, as a person reads it on `status`'s `Readiness:`
    /// line ("waiting for the speaker"): a level's name says how far speakerd came, which reads
    /// as the wrong thing ("adapter" when the adapter is fine and the speaker is missing).
    public var spoken: String {
        switch self {
        case .started: "starting (not on the bus yet)"
        case .bus: "waiting for Bluetooth (bluetoothd and a powered adapter)"
        case .adapter: "waiting for the speaker"
        case .speakerConnected: "waiting for the speaker's audio path and the soundfont"
        case .playbackReady: "ready to play"
        }
    }
}
