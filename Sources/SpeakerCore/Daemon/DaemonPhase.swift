import SpeakerdAPI
/// Where the daemon is, as one value: the source of `STATUS=` for systemd and of the
/// `message` in `composer-cli status`, so both always say the same thing.
///
/// It is computed (``SpeakerdDaemon``'s `phase`) from the readiness verdict and playback,
/// never stored: below `playbackReady` it is the reason readiness gives.
public enum DaemonPhase: Equatable, Sendable {
    case notReady(NotReadyReason)
    case ready(speakerName: String)
    case playing(file: String, speakerName: String)
    case paused(file: String, speakerName: String)
    case stopping

    public static let starting = DaemonPhase.notReady(.starting)

    /// The sentence a person reads in `systemctl status` and `composer-cli status`.
    public var statusLine: String {
        switch self {
        case .notReady(let reason): reason.sentence
        case .ready(let name): "Ready: \(name)"
        case .playing(let file, let name): "Playing \(file) on \(name)"
        case .paused(let file, let name): "Paused \(file) on \(name)"
        case .stopping: "Stopping…"
        }
    }
}

/// Why the compatibility gate is closed: the rest of start-up is cancelled until it clears,
/// and the daemon resumes on its own when it does (no restart needed).
public enum CompatibilityProblem: Equatable, Sendable, CustomStringConvertible {
    /// Nobody owns `org.bluez` on the bus.
    case noBlueZ
    /// BlueZ runs but has no adapter (or not the configured one).
    case noAdapter(configured: String?)
    /// The adapter is soft- or hard-blocked by rfkill.
    case adapterBlocked(adapter: String)
    /// bluetoothd lacks what speakerd needs: `found` is what the bus shows (e.g. "BlueZ 4
    /// (org.bluez.Manager)"), `needed` the oldest BlueZ version that works (e.g. "5.30").
    case blueZTooOld(found: String, needed: String)

    public var description: String {
        switch self {
        case .noBlueZ:
            "Waiting for bluetoothd (org.bluez is not on the bus; is bluetooth.service running?)"
        case .noAdapter(let configured?):
            "Waiting for Bluetooth adapter \(configured) to be plugged in"
        case .noAdapter(nil):
            "Waiting for a Bluetooth adapter to be plugged in"
        case .adapterBlocked(let adapter):
            "Bluetooth adapter \(adapter) is blocked by rfkill; run 'rfkill unblock bluetooth'"
        case .blueZTooOld(let found, let needed):
            "\(found) found; speakerd needs BlueZ \(needed) or newer (upgrade the bluez package)"
        }
    }
}
