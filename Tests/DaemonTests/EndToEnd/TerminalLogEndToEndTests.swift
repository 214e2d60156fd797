import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// speakerd's log as a person reads it on a terminal, and the lines that frame a run.
@Suite("speakerd's log on a terminal: the real program", .serialized)
struct TerminalLogEndToEndTests {
    @Test("speakerd run by hand on a terminal: no <N> priority prefixes (JOURNAL_STREAM inherited from a unit's shell is not its stderr), one line at start naming the version, config, bus and output, one line on SIGTERM")
    func logOnATerminal() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        // What a shell under `systemd-run --pty` or a unit's ExecStart=/bin/bash hands on: the
        // journal stream of that unit, not speakerd's stderr.
        let inherited = ["JOURNAL_STREAM": "8:1"]
        let log = try await NewcomerEndToEndTests().withSpeakerd(fake, output: "null", environment: inherited) { _, client, _ in
            try await eventually("playback ready", within: .seconds(30)) { try await client.status().readiness == "playbackReady" }
        }
        let lines = log.split(separator: "\n").map(String.init)
        #expect(!lines.isEmpty)
        #expect(!lines.contains { $0.wholeMatch(of: /<[0-7]>.*/) != nil }, "priority prefixes on a terminal:\n\(log)")
        let start = "speakerd: speakerd \(SpeakerdVersion.current) starting: config \(fake.state.path)/speakerd.conf, "
            + "bus \(fake.world.address), audio output null"
        #expect(lines.first == start, "\(log)")
        #expect(lines.filter { $0.contains("starting: config") }.count == 1, "\(log)")
        #expect(lines.filter { $0 == "speakerd: stopping: SIGTERM received" }.count == 1, "\(log)")
    }

    @Test("on a real terminal (a pty) whose shell came from a unit (JOURNAL_STREAM inherited): no <N> on the screen, and Ctrl-C stops speakerd with one line")
    func logOnAPty() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let state = fake.state
        state.write("", to: "speakerd.conf")
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        let run = try await ExecutableRun.run(program: "/usr/bin/python3", [
            PersonSessionTests.ptySession, "--columns", "200", "--timeout", "60",
            #"[{"expect": "connected to JBL Flip 5"}, {"send": "\u0003"}, {"expect": "stopping: SIGINT received"}]"#, "--",
            speakerd, "--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", fake.world.address,
            "--audio-output", "null", "--soundfont", GatedPlayEndToEndTests.soundFont,
        ], environment: ["JOURNAL_STREAM": "8:1"])
        #expect(run.status == 0, "pty-session: \(run.standardError)\n\(run.standardOutput)")
        let screen = run.standardOutput.replacingOccurrences(of: "\r", with: "")
        // The terminal echoes Ctrl-C as "^C" before the next line.
        let lines = screen.replacingOccurrences(of: "^C", with: "").split(separator: "\n").map(String.init)
            .filter { $0.hasPrefix("speakerd: ") || $0.hasPrefix("<") }
        #expect(lines.contains { $0.hasPrefix("speakerd: connected to JBL Flip 5") }, "\(screen)")
        #expect(!lines.contains { $0.wholeMatch(of: /<[0-7]>.*/) != nil }, "priority prefixes on the terminal:\n\(screen)")
        #expect(lines.filter { $0 == "speakerd: stopping: SIGINT received" }.count == 1, "\(screen)")
        // Stopped mid start-up (the soundfont still loading): that line is the whole story, with no
        // "error: start-up aborted", no D-Bus calls "cancelled", no start-up summary after it.
        let afterStop = lines.drop { $0 != "speakerd: stopping: SIGINT received" }.dropFirst()
        #expect(afterStop.isEmpty, "said after the stop:\n\(afterStop.joined(separator: "\n"))")
        #expect(screen.hasSuffix("pty-session: exit 0\n"), "Ctrl-C is a clean stop: \(screen.suffix(300))")
    }

    @Test("under journald (JOURNAL_STREAM names speakerd's stderr): every line carries its <N> priority for the journal")
    func logUnderJournald() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let state = fake.state
        state.write("", to: "speakerd.conf")
        // A file stands in for the journal's stream: stderr goes to it, and JOURNAL_STREAM names
        // its device and inode, as systemd names the stream it connects.
        let journal = state.path + "/journal"
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        let script = #"exec 2>"$1"; JOURNAL_STREAM=$(stat -c %d:%i "$1"); export JOURNAL_STREAM; shift; exec "$0" "$@""#
        let run = try await ExecutableRun.run(program: "/bin/sh", [
            "-c", script, speakerd, journal, "--config", state.path + "/speakerd.conf", "--state-dir", state.path,
            "--bus", fake.world.address, "--audio-output", "null", "--soundfont", GatedPlayEndToEndTests.soundFont,
        ]) { pid in
            defer { kill(pid, SIGTERM) }
            try await eventually("speakerd has connected the speaker") {
                (try? String(contentsOfFile: journal, encoding: .utf8))?.contains("connected to") == true
            }
        }
        #expect(run.status == 0, "\(run.standardError)")
        let log = try String(contentsOfFile: journal, encoding: .utf8)
        let lines = log.split(separator: "\n").map(String.init)
        #expect(lines.count >= 3, "\(log)")
        #expect(lines.allSatisfy { $0.wholeMatch(of: /<[0-7]>speakerd: .*/) != nil }, "a line without its priority:\n\(log)")
        #expect(lines.first?.hasPrefix("<6>speakerd: speakerd \(SpeakerdVersion.current) starting: config ") == true, "\(log)")
        #expect(lines.contains("<6>speakerd: stopping: SIGTERM received"), "\(log)")
    }
}
