import MIDI
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The real speakerd, started the way speakerd.service starts it as far as seccomp goes, doing
/// everything a box does in a day: start, tell systemd it is ready, connect the known speaker,
/// load FluidSynth with dlopen and the soundfont, play a song to the end, and stop on SIGTERM.
extension SeccompSandboxTests {
    /// The kernel's word on `pid`'s seccomp state: the mode (2 is filtering) and how many filters it carries.
    static func seccompState(of pid: pid_t) -> (mode: Int, filters: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)) }
        }
        guard let mode = field("Seccomp"), let filters = field("Seccomp_filters") else { return nil }
        return (mode, filters)
    }

    @Test("under MemoryDenyWriteExecute, @system-service and the rest, speakerd says READY=1, connects the speaker, plays a song through FluidSynth to the WAV and stops cleanly on SIGTERM")
    func speakerdRunsSandboxed() async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        let song = try MIDIFileReader.read(contentsOfFile: songPath)
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        let state = fake.state, address = fake.world.address
        state.write("", to: "speakerd.conf")
        let wav = state.path + "/song.wav"
        let listener = NotifySocketListener(path: state.path + "/notify")
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        // Under the leak check (an AddressSanitizer build), LeakSanitizer's exit-time scan stops
        // the process's threads with ptrace, which @system-service refuses just as systemd would:
        // the sandboxed run keeps AddressSanitizer but not the leak scan (other tests check leaks).
        var environment = ["NOTIFY_SOCKET": listener.notifySocket]
        if let asan = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] {
            environment["ASAN_OPTIONS"] = asan + ":detect_leaks=0"
        }

        // As under systemd, stderr is the journal: its lines carry their priority.
        let daemon = try await ExecutableRun.run(
            program: Self.launcher,
            [Self.unit, speakerd, "--config", state.path + "/speakerd.conf", "--state-dir", state.path,
             "--bus", address, "--audio-output", "file:" + wav, "--soundfont", GatedPlayEndToEndTests.soundFont],
            environment: environment, journal: true
        ) { pid in
            defer { kill(pid, SIGTERM) }
            var notifications: [String] = []
            try await eventually("speakerd says READY=1") {
                notifications += listener.receiveAll()
                return notifications.contains { $0.split(separator: "\n").contains("READY=1") }
            }
            // READY=1 comes from speakerd itself, so the launcher has exec'ed it by now.
            let sandbox = Self.seccompState(of: pid)
            #expect(sandbox?.mode == 2, "speakerd is not under a seccomp filter: \(String(describing: sandbox))")
            #expect((sandbox?.filters ?? 0) >= 10, "speakerd carries too few filters: \(String(describing: sandbox))")

            let client = try await fake.client()
            try await eventually("speakerd has connected the known speaker and is ready to play") {
                guard let status = try? await client.status() else { return false }
                return status.speaker?.connected == true && status.readiness == "playbackReady"
            }
            let played = try await ExecutableRun.run("composer-cli", ["play", "--wait", songPath, "--bus", address])
            #expect(played.status == 0, "composer-cli play --wait failed: \(played.standardError)")
            #expect(try await client.status().playback.state == "idle")
        }
        #expect(daemon.status == 0, "sandboxed speakerd did not stop cleanly on SIGTERM (exit \(daemon.status)): \(daemon.standardError)")
        let notifications = listener.receiveAll()
        #expect(notifications.contains { $0.hasPrefix("STOPPING=1") })
        // A refused call that mattered would surface as an error line (journald priorities 0 to 3)
        // or name the errno the filters answer with. (Warnings such as a slow block on a loaded
        // machine are not the sandbox's doing.)
        let refusals = ["Operation not permitted", "Address family not supported", "Function not implemented"]
        let complaints = daemon.standardError.split(separator: "\n").filter { line in
            line.range(of: #"^<[0-3]>"#, options: .regularExpression) != nil || refusals.contains { line.contains($0) }
        }
        #expect(complaints.isEmpty, "speakerd complained under the sandbox:\n\(complaints.joined(separator: "\n"))")

        // What the speaker would have heard: the whole scale, in tune.
        try expectWholeScaleInTune(wav: wav, song: song)
        _ = fake
    }
}
