/// How many calls to an object's bounded methods may be pending at once, per caller and in all.
///
/// Each pending call holds something the process has little of: a `Play` holds the file
/// descriptors it was sent until its song is read, and may wait up to the play timeout for
/// the speaker. Without a bound, one local client with many connections can make the daemon
/// run out of descriptors, and libdbus then loses the daemon's own bus connection. Over a
/// bound the call is refused at once with `busyErrorName`, before its arguments are even
/// decoded, so its descriptors are released straight away: a flood costs the flooding
/// caller its own requests, never the daemon its connection.
public struct DBusCallLimits: Sendable, Equatable {
    /// Bounded calls one unique bus name (one client connection) may have pending.
    public var perSender: Int
    /// Bounded calls all callers together may have pending.
    public var total: Int
    /// The error name a refused call gets.
    public var busyErrorName: String

    public init(perSender: Int, total: Int, busyErrorName: String) {
        self.perSender = perSender
        self.total = total
        self.busyErrorName = busyErrorName
    }
}
