import AsyncSignals
/// Why playback is not ready, as one value.
///
/// The same value is shown everywhere a person may look: `composer-cli status` (and `--json`,
/// key `waitingFor`), systemd's `STATUS=`, the line a failed `play` prints, the start-up rows,
/// and one log line each time it changes. It is computed from what the daemon observes
/// (the daemon's `ReadinessInputs.verdict`; what the daemon alone
/// knows becomes a reason in its `NotReadyReason+Daemon.swift`), never set by whoever last touched the speaker, so the reason
/// shown is the reason that holds.
public struct NotReadyReason: Equatable, Sendable, CustomStringConvertible {
    /// A stable name for scripts (`waitingFor.code` in `--json`).
    public enum Code: String, Sendable, Codable, CaseIterable {
        case starting
        case noBluetoothd
        case blueZTooOld
        case noAdapter
        case adapterBlocked
        case lookingForSpeaker
        case waitingForPick
        case connecting
        case speakerUnreachable
        case userDisconnected
        case pairingRefused
        case blueALSANotRunning
        case noAudioDevice
        case soundServerUnreachable
        case outputUnusable
        case noBluetoothAudioPath
        case soundfontLoading
        case soundfontMissing
        case noPlaybackEngine
    }

    public var code: Code
    /// One sentence, starting lower-case so it reads inside another ("still connecting to …").
    public var message: String
    /// Whether waiting can end in playback with nobody acting: a `play` request waits only then,
    /// and fails at once with this reason otherwise.
    public var waitingCanSucceed: Bool

    public init(_ code: Code, _ message: String, waitingCanSucceed: Bool) {
        self.code = code
        self.message = message
        self.waitingCanSucceed = waitingCanSucceed
    }

    public var description: String { message }

    /// The reason as a sentence of its own (status line, `STATUS=`).
    public var sentence: String { message.prefix(1).uppercased() + message.dropFirst() }

    // MARK: - The reasons

    public static let starting = NotReadyReason(.starting, "starting…", waitingCanSucceed: true)

    public static let lookingForSpeaker = NotReadyReason(
        .lookingForSpeaker, "looking for a speaker nearby (auto_pick)", waitingCanSucceed: true)

    public static let waitingForPick = NotReadyReason(
        .waitingForPick, "waiting for a speaker: run 'composer-cli scan', then 'composer-cli connect ADDRESS'",
        waitingCanSucceed: false)

    public static func connecting(_ name: String) -> NotReadyReason {
        NotReadyReason(.connecting, "connecting to \(name)…", waitingCanSucceed: true)
    }

    public static func unreachable(_ name: String, retryIn delay: Duration?) -> NotReadyReason {
        let next = delay.map { "retrying in \(max(1, Int(($0.milliseconds / 1000).rounded()))) s" } ?? "retrying when it shows up"
        return NotReadyReason(.speakerUnreachable, "\(name) is out of reach; \(next)", waitingCanSucceed: true)
    }

    public static func userDisconnected(_ name: String) -> NotReadyReason {
        NotReadyReason(.userDisconnected, "disconnected from \(name) as asked; 'composer-cli connect' reconnects",
                       waitingCanSucceed: false)
    }

    /// A speaker that would not pair: waiting cannot end in playback, as nothing is retried (a
    /// speaker not in pairing mode is not put in it by paging it again).
    public static func pairingRefused(_ name: String, address: String, _ why: String) -> NotReadyReason {
        NotReadyReason(.pairingRefused,
                       "\(name) did not pair (\(why)); put it in pairing mode, then 'composer-cli connect \(address)'",
                       waitingCanSucceed: false)
    }

    public static let blueALSANotRunning = NotReadyReason(
        .blueALSANotRunning, "BlueALSA is not running (org.bluealsa is not on the bus; is bluealsa.service running?)",
        waitingCanSucceed: false)

    public static func noAudioDevice(_ name: String, _ detail: String) -> NotReadyReason {
        NotReadyReason(.noAudioDevice, "waiting for \(name)'s audio device (\(detail))", waitingCanSucceed: true)
    }

    public static func soundServerUnreachable(_ detail: String) -> NotReadyReason {
        NotReadyReason(.soundServerUnreachable, detail, waitingCanSucceed: false)
    }

    public static func outputUnusable(_ detail: String) -> NotReadyReason {
        NotReadyReason(.outputUnusable, detail, waitingCanSucceed: false)
    }

    /// The fix a person can act on, for `status`, `play` and `doctor` alike.
    public static let noBluetoothAudioPathFix = "no Bluetooth audio path: install BlueALSA or PipeWire; composer-cli doctor"

    /// `auto` has nothing that reaches the speaker itself. Waiting alone does not help (someone
    /// must install or start a stack), though the path follows BlueALSA starting.
    public static func noBluetoothAudioPath(_ detail: String) -> NotReadyReason {
        NotReadyReason(.noBluetoothAudioPath, "\(noBluetoothAudioPathFix) (\(detail))", waitingCanSucceed: false)
    }

    public static func soundfontLoading(_ path: String) -> NotReadyReason {
        NotReadyReason(.soundfontLoading, "loading the soundfont \(path)", waitingCanSucceed: true)
    }

    public static func soundfontMissing(_ detail: String) -> NotReadyReason {
        NotReadyReason(.soundfontMissing, detail, waitingCanSucceed: false)
    }

    /// Only in-process daemons built without playback (tests): `play` fails at once anyway.
    public static let noPlaybackEngine = NotReadyReason(
        .noPlaybackEngine, "this speakerd has no playback engine", waitingCanSucceed: true)
}
