@testable import ComposerCLIKit
import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// `composer-cli doctor` with speakerd running: the sound server it finds from the caller's shell
/// may not be the one the service reaches (a drop-in sets PULSE_SERVER inside the unit only), so
/// speakerd's own view of its audio path is shown beside it, and each line says whose view it is.
@Suite("doctor shows speakerd's own view of its audio path beside the shell's")
struct DoctorDaemonViewTests {
    /// The shell's checks on a box where the shell finds no sound server.
    static let shellReport = DoctorReport(checks: [
        .init(name: "bus", outcome: .ok, detail: "system bus at unix:path=/run/dbus/system_bus_socket"),
        .init(name: "sound server", outcome: .problem,
              detail: "no sound server at /run/user/0/pulse/native (no such file or directory): start PulseAudio or PipeWire, or give speakerd its socket (docs: SOUND-SERVERS.md, a drop-in)"),
    ])

    static func status(audioPath: String? = nil, outputChoice: String? = nil, waitingFor: StatusReport.WaitingFor? = nil) -> StatusReport {
        StatusReport(readiness: audioPath == nil ? "speakerConnected" : "playbackReady", message: "", speaker: nil, playback: .idle,
                     waitingFor: waitingFor,
                     audioPath: audioPath, outputChoice: outputChoice)
    }

    @Test("speakerd not running: the report is the shell's alone, unchanged")
    func notRunning() {
        #expect(SoundStackDoctor.addingDaemonView(nil, to: Self.shellReport) == Self.shellReport)
    }

    @Test("the shell finds no server while speakerd plays through the speaker's sink: both are shown, each saying whose view it is")
    func serviceSeesAnotherServer() {
        let status = Self.status(audioPath: "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink",
                                 outputChoice: "PulseAudio/PipeWire (BlueALSA is not on the system bus; a sound server answers at unix:/run/user/1001/pulse/native (PULSE_SERVER))")
        let report = SoundStackDoctor.addingDaemonView(status, to: Self.shellReport)
        #expect(report.checks.map(\.name) == ["bus", "sound server", "audio path (speakerd)"])
        let shell = report.checks[1]
        #expect(shell.outcome == .problem, "the shell's finding is still what the shell found")
        #expect(shell.detail == "this shell's view (its environment, not the service's): " + Self.shellReport.checks[1].detail)
        let service = report.checks[2]
        #expect(service.outcome == .ok)
        #expect(service.detail == "speakerd's own view: it plays through PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink; "
                + "auto chose PulseAudio/PipeWire (BlueALSA is not on the system bus; a sound server answers at unix:/run/user/1001/pulse/native (PULSE_SERVER))")
        #expect(report.humanReadable.contains("ok       audio path (speakerd)  speakerd's own view: it plays through PulseAudio sink"),
                "\(report.humanReadable)")
        #expect(ReportJSON.encode(report).contains("\"name\" : \"audio path (speakerd)\""))
    }

    @Test("speakerd that cannot reach its sound server is a problem; one waiting for the speaker's sink a warning; one still connecting is not judged")
    func serviceWaiting() {
        let unreachable = SoundStackDoctor.addingDaemonView(Self.status(waitingFor: .init(
            code: NotReadyReason.Code.soundServerUnreachable.rawValue,
            message: "no sound server at /run/user/1001/pulse/native: is PulseAudio or PipeWire running, and may speakerd reach it?")),
            to: Self.shellReport).checks.last
        #expect(unreachable?.outcome == .problem)
        #expect(unreachable?.detail == "speakerd's own view: it cannot play: no sound server at /run/user/1001/pulse/native: is PulseAudio or PipeWire running, and may speakerd reach it?")

        let noSink = SoundStackDoctor.addingDaemonView(Self.status(waitingFor: .init(
            code: NotReadyReason.Code.noAudioDevice.rawValue, message: "JBL Flip 5 is connected but has no audio device")),
            to: Self.shellReport).checks.last
        #expect(noSink?.outcome == .warning)
        #expect(noSink?.detail == "speakerd's own view: it cannot play: JBL Flip 5 is connected but has no audio device")

        let connecting = SoundStackDoctor.addingDaemonView(Self.status(waitingFor: .init(
            code: NotReadyReason.Code.connecting.rawValue, message: "still connecting to JBL Flip 5")),
            to: Self.shellReport).checks.last
        #expect(connecting?.outcome == .ok)
        #expect(connecting?.detail == "speakerd's own view: its audio path is not checked yet; it waits for still connecting to JBL Flip 5")
    }
}
