import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// speakerd's log as a person reads it on a terminal, and the lines that frame a run.
@Suite("speakerd's log on a terminal: the real program", .serialized)
struct TerminalLogEndToEndTests {
    @Test("speakerd run by hand on a terminal: no <N> priority prefixes, one line at start naming the version, config, bus and output, one line on SIGTERM")
    func logOnATerminal() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let log = try await NewcomerEndToEndTests().withSpeakerd(fake, output: "null") { _, client, _ in
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
}
