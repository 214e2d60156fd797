import BlueZ
import SpeakerdAPI
/// What the log last said about playback not being ready, so a condition that repeats is said
/// once until it changes.
///
/// A speaker that stays off cycles through "connecting to X…" and "X is out of reach; retrying
/// in N s" at every retry, for hours; the journal needs that once, not twice per retry. A new
/// condition (another code, another speaker) or being ready in between makes it news again.
struct ReadinessLogMemory: Equatable, Sendable {
    private struct Said: Equatable, Sendable {
        var reason: NotReadyReason
        var speaker: BluetoothAddress?
    }

    private var said: Said?
    /// speakerd is stopping: "stopping: … received" was the last word on readiness.
    private(set) var isMuted = false

    /// Whether `reason` about `speaker` deserves a line; remembers it if so.
    mutating func shouldSay(_ reason: NotReadyReason, about speaker: BluetoothAddress?) -> Bool {
        if isMuted { return false }
        if let said, said.speaker == speaker {
            if said.reason == reason { return false }
            // Retries of an unreachable speaker: the same condition with a new delay.
            if said.reason.code == .speakerUnreachable, reason.code == .connecting || reason.code == .speakerUnreachable {
                return false
            }
        }
        said = Said(reason: reason, speaker: speaker)
        return true
    }

    /// Playback became ready: the next reason, whatever it is, is news.
    mutating func forget() { said = nil }

    /// Nothing more to say: speakerd has been told to stop (a start-up step finishing meanwhile
    /// would otherwise log a readiness change after "stopping: SIGTERM received").
    mutating func mute() { isMuted = true }
}
