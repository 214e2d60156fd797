import DBus
/// What logind tells us about system suspend, from its `PrepareForSleep(b)` signal.
///
/// logind sends `true` just before the system sleeps (delay inhibitors get their chance to
/// finish) and `false` once it is back: the moment Bluetooth links are gone and the speaker
/// has to be reconnected.
public enum SleepEvent: Sendable, Hashable, CustomStringConvertible {
    /// `PrepareForSleep(true)`: the system is about to suspend or hibernate.
    case preparingForSleep
    /// `PrepareForSleep(false)`: the system has resumed.
    case resumed

    public var description: String {
        switch self {
        case .preparingForSleep: "preparing for sleep"
        case .resumed: "resumed"
        }
    }
}

/// Why a logind request did not work.
///
/// `notRunning` is an expected condition (containers, minimal systems without systemd-logind):
/// callers treat it as "there is nothing to inhibit" and carry on.
public enum LogindError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nobody owns `org.freedesktop.login1` on this bus.
    case notRunning
    /// logind answered, but not with what its interface promises (e.g. no file descriptor).
    case unexpectedReply(method: String, detail: String)
    /// The bus call failed for another reason (refused by policy, timeout, disconnected…).
    case bus(method: String, DBusError)

    public var description: String {
        switch self {
        case .notRunning:
            "logind is not running on this bus (no owner for org.freedesktop.login1); sleep inhibitors are unavailable"
        case .unexpectedReply(let method, let detail):
            "logind's \(method) reply was not understood: \(detail)"
        case .bus(let method, let error):
            "logind \(method) failed: \(error)"
        }
    }
}
