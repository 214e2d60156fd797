import Foundation
@testable import SpeakerCore
import Testing

/// The PulseAudio path under speakerd.service's seccomp filters (Tests/Tools/systemd-seccomp-exec).
///
/// The unit's MemoryDenyWriteExecute=yes, RestrictAddressFamilies=AF_UNIX AF_BLUETOOTH,
/// RestrictRealtime=yes and SystemCallFilter=@system-service also bind what speakerd loads for
/// this output: libfluidsynth's PulseAudio driver and libpulse, with its shared-memory transport.
/// (The driver's thread asks for SCHED_FIFO and is refused by RestrictRealtime=yes; it carries
/// on at normal priority, which this test shows is enough.) Under AddressSanitizer (the leak
/// check) the sandboxed speakerd runs without LeakSanitizer's exit scan: it needs ptrace, which
/// @system-service refuses as systemd would.
extension PulseAudioDaemonTests {
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Tools").standardized.path
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../systemd/speakerd.service").standardized.path

    @Test("under speakerd.service's seccomp filters, speakerd plays a song to PulseAudio: the sink hears a 440 Hz tone",
          .timeLimit(.minutes(2)))
    func sandboxedDaemonPlaysToPulseAudio() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        var recording: Recording?
        try await Self.withDaemon(pulseServer: server.address, in: directory,
                                  launcher: [Self.tools + "/systemd-seccomp-exec", Self.unit]) { client in
            recording = try await server.record(to: directory.appendingPathComponent("monitor.raw").path)
            let started = try await client.play(try Self.request(ClientSongs.sustainedA4(seconds: 1.2), named: "a4.mid", in: directory))
            #expect(started.playback.state == "playing")
            try await Self.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
            #expect(try await client.status().playback.state == "idle")
        }
        let mono = try await #require(recording).finish()
        let tone = PulseAudioOutputTests.a4Windows(mono)
        #expect(tone.loud > 0, "the sink heard nothing from the sandboxed speakerd")
        #expect(tone.clean > 0, "no stretch of what the sink heard is a clean A4 (\(tone.loud) loud windows)")
    }
}
