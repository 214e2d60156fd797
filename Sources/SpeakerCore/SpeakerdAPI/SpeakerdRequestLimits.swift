import DBus
/// How many long requests (`Play`, `Scan`, `Connect`, `Disconnect`, `Forget`, and `Volume` and
/// `SetVolume`, which wait on the sound server or BlueALSA) speakerd keeps
/// pending at once: per client connection, and from everyone together.
///
/// A pending `Play` holds the descriptors its client sent (a pipe may stay open until the read
/// time-out), so these bounds are also what sizes `LimitNOFILE=` in `speakerd.service`. Over a
/// bound a request gets `io.speakerd.Error.Busy` at once. Set with `max_requests_per_client`
/// and `max_requests_total` in the config file.
public struct SpeakerdRequestLimits: Equatable, Sendable {
    public var perClient: Int
    public var total: Int
    /// How long a `Play` call may wait before it is answered. Waiting for the speaker may take
    /// longer (`play_timeout_seconds`, up to an hour), but most D-Bus client libraries give up
    /// on a reply after 25 s; so past this a `Play` answers "accepted, still waiting" with a
    /// request id, and the outcome follows as the `PlayRequestEnded` signal.
    public var playAnswerWithin: Duration

    public init(perClient: Int = 16, total: Int = 128, playAnswerWithin: Duration = .seconds(20)) {
        self.perClient = perClient
        self.total = total
        self.playAnswerWithin = playAnswerWithin
    }

    public static let `default` = SpeakerdRequestLimits()

    /// The largest value either key accepts: `speakerd.service`'s `LimitNOFILE=` is sized for it.
    public static let maximumTotal = 256

    var dbusCallLimits: DBusCallLimits {
        DBusCallLimits(perSender: perClient, total: total, busyErrorName: SpeakerdBus.ErrorName.busy)
    }
}

/// A control that knows its own request limits (the daemon, from its configuration), so the
/// exported object can be built from it alone.
public protocol SpeakerdRequestLimitsSource {
    var requestLimits: SpeakerdRequestLimits { get }
}
