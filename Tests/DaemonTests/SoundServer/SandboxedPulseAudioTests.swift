import Foundation
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
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Tools").standardized.path
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../systemd/speakerd.service").standardized.path

    @Test("under speakerd.service's seccomp filters, speakerd plays a song to PulseAudio: the sink hears a 440 Hz tone",
          .timeLimit(.minutes(2)))
    func sandboxedDaemonPlaysToPulseAudio() async throws {
        try await PulseAudioDaemonTests.expectA4HeardBySink(launcher: [Self.tools + "/systemd-seccomp-exec", Self.unit])
    }
}
