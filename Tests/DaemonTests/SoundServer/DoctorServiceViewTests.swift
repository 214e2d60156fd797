import Foundation
@testable import ComposerCLIKit
import Testing
import TestSupport

/// `composer-cli doctor` run from a shell that cannot see the sound server speakerd uses (no
/// PULSE_SERVER, another runtime directory), as with the user-session drop-in, which sets
/// PULSE_SERVER inside the unit only: the shell's line and speakerd's own line disagree, and each
/// says whose view it is.
@Suite("doctor shows the running speakerd's audio path beside what the shell finds")
struct DoctorServiceViewTests {
    @Test("the shell finds no sound server; the running speakerd plays through the speaker's sink and says what auto chose",
          .timeLimit(.minutes(2)))
    func shellAndServiceDisagree() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        var fakeBlueZ: FakeBusWorld?
        var report: DoctorReport?
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory, audioOutput: "auto",
                                                   config: "audio_output = auto\n", world: { fakeBlueZ = $0 }) { _, follower in
            let world = try #require(fakeBlueZ)
            let sink = try #require(follower.sink)
            let shell = directory.appendingPathComponent("shell", isDirectory: true)
            try FileManager.default.createDirectory(at: shell, withIntermediateDirectories: true)
            let output = directory.appendingPathComponent("doctor.json").path
            let doctor = try SpawnedProcess.spawn(
                PulseAudioDaemonTests.productsDirectory.appendingPathComponent("composer-cli").path,
                ["doctor", "--json", "--bus", world.address, "--config", directory.appendingPathComponent("speakerd.conf").path,
                 "--state-dir", directory.path],
                environment: ["PATH": "/usr/bin:/bin", "HOME": shell.path, "XDG_RUNTIME_DIR": shell.path],
                standardOutput: .file(output), standardError: .file(output + ".err"))
            _ = await doctor.exitStatus()
            let text = try String(contentsOfFile: output, encoding: .utf8)
            report = try JSONDecoder().decode(DoctorReport.self, from: Data(text.utf8))
            let service = try #require(report?.checks.first { $0.name == SoundStackDoctor.daemonViewName }, "no line with speakerd's view: \(text)")
            #expect(service.outcome == .ok)
            #expect(service.detail.hasPrefix("speakerd's own view: it plays through PulseAudio sink \(sink.name); auto chose PulseAudio/PipeWire"),
                    "\(service.detail)")
            #expect(service.detail.contains("a sound server answers at \(server.address) (PULSE_SERVER)"), "\(service.detail)")
        }
        let shell = try #require(report?.checks.first { $0.name == "sound server" })
        #expect(shell.outcome == .problem, "the shell's finding is still what the shell found: no Bluetooth audio path from here")
        #expect(shell.detail.hasPrefix("this shell's view (its environment, not the service's): no Bluetooth audio path"),
                "\(shell.detail)")
        #expect(!shell.detail.contains(server.address), "the shell could not have found speakerd's server: \(shell.detail)")
    }
}
