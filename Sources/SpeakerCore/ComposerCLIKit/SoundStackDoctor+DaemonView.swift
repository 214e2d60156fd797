import SpeakerdAPI
import AudioPath
import Configuration
/// The sound stack as the running speakerd sees it, beside the doctor's own checks.
///
/// `composer-cli doctor` looks for the sound server from the caller's shell: its PULSE_SERVER,
/// XDG_RUNTIME_DIR and user. The service may see another one (the user-session drop-in sets
/// PULSE_SERVER only inside the unit), so a shell with no server can face a speakerd that plays
/// fine, and the other way round. When speakerd answers, its status says which output it uses
/// (what `auto` chose and why) and where its audio path goes, or what it waits for; the doctor
/// then shows both, each line saying whose view it is.
extension SoundStackDoctor {
    /// The name of the line with speakerd's own view.
    public static let daemonViewName = "audio path (speakerd)"

    /// `report` with speakerd's view of its audio path added after the sound-stack checks, and the
    /// shell's sound-server line marked as the shell's; `report` itself when speakerd is not
    /// running (`status` nil).
    public static func addingDaemonView(_ status: StatusReport?, to report: DoctorReport) -> DoctorReport {
        guard let status else { return report }
        var checks = report.checks.map { check in
            guard check.name == "sound server" else { return check }
            var marked = check
            marked.detail = "this shell's view (its environment, not the service's): " + check.detail
            return marked
        }
        checks.append(daemonView(status))
        return DoctorReport(checks: checks)
    }

    /// One line: where the running speakerd's audio goes and why, or what it waits for.
    static func daemonView(_ status: StatusReport) -> DoctorReport.Check {
        let choice = status.outputChoice.map { "; auto chose \($0)" } ?? ""
        if let path = status.audioPath {
            return .init(name: daemonViewName, outcome: .ok, detail: "speakerd's own view: it plays through \(path)\(choice)")
        }
        guard let waiting = status.waitingFor else {
            return .init(name: daemonViewName, outcome: .ok, detail: "speakerd's own view: its audio path is not known yet\(choice)")
        }
        let outcome: DoctorReport.Outcome = switch NotReadyReason.Code(rawValue: waiting.code) {
        case .soundServerUnreachable?, .outputUnusable?, .blueALSANotRunning?, .noBluetoothAudioPath?: .problem
        case .noAudioDevice?: .warning
        default: .ok
        }
        let what = outcome == .ok ? "its audio path is not checked yet; it waits for" : "it cannot play:"
        return .init(name: daemonViewName, outcome: outcome, detail: "speakerd's own view: \(what) \(waiting.message)\(choice)")
    }
}
