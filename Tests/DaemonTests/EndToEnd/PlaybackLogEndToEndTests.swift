import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// A person's songs as `journalctl -u speakerd` shows them: each thing that happened to a song,
/// once, when it happened.
@Suite("Playback in speakerd's log: the real programs", .serialized)
struct PlaybackLogEndToEndTests {
    @Test("a person's songs in the log: playing said when a song starts (a queued one later), pause, resume, stop, a replaced and a finished song each once, positions to a tenth of a second")
    func playbackInTheLog() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let long = fake.state.path + "/long.mid"
        try Data(LongRestSong.bytes(seconds: 120)).write(to: URL(fileURLWithPath: long))
        let scale = try GatedPlayEndToEndTests.song()
        let log = try await NewcomerEndToEndTests().withSpeakerd(fake, output: "null") { address, client, _ in
            try await eventually("playback ready", within: .seconds(30)) { try await client.status().readiness == "playbackReady" }
            func cli(_ arguments: String...) async throws {
                let run = try await ExecutableRun.run("composer-cli", arguments + ["--bus", address])
                #expect(run.status == 0, "composer-cli \(arguments.joined(separator: " ")): \(run.standardError)")
            }
            try await cli("play", long)
            try await Task.sleep(for: .milliseconds(1_300))
            try await cli("pause")
            try await cli("resume")
            try await cli("stop")
            try await cli("play", long)
            try await cli("play", scale)  // replaces the long song
            try await cli("play", long, "--queue")  // waits for the scale to finish
            try await eventually("the queued song plays after the scale", within: .seconds(30)) {
                let playback = try await client.status().playback
                return playback.state == "playing" && playback.file == "long.mid"
            }
            try await cli("stop")
        }
        let messages = NewcomerEndToEndTests.messages(log)
        let transcript = messages.joined(separator: "\n")
        let on = " on JBL Flip 5 (11:22:33:AA:BB:CC)"
        func index(_ prefix: String) -> [Int] { messages.indices.filter { messages[$0].hasPrefix(prefix) } }

        #expect(index("playing long.mid\(on)").count == 3, "the long song started three times:\n\(transcript)")
        #expect(index("playing test-c-major-scale.mid\(on)").count == 1, "\(transcript)")
        #expect(index("finished playing test-c-major-scale.mid\(on)").count == 1, "\(transcript)")
        #expect(index("queued long.mid\(on)").count == 1, "\(transcript)")
        #expect(index("paused long.mid\(on) at ").count == 1, "\(transcript)")
        #expect(index("resumed long.mid\(on) at ").count == 1, "\(transcript)")
        #expect(index("long.mid\(on) stopped at ").count == 2, "\(transcript)")
        #expect(index("long.mid\(on) replaced by test-c-major-scale.mid at ").count == 1, "\(transcript)")

        // Queued is not playing: the queued song's "playing" comes after the scale finished.
        let queued = try #require(index("queued long.mid").first)
        let finished = try #require(index("finished playing test-c-major-scale.mid").first)
        let lastStart = try #require(index("playing long.mid").last)
        #expect(queued < finished && finished < lastStart, "\(transcript)")

        // Positions to a tenth: "paused long.mid on … at 1.3 s", never 1.3000453514739229.
        for line in messages where line.contains(" at ") && (line.hasPrefix("paused") || line.hasPrefix("resumed") || line.contains("stopped at") || line.contains("replaced by")) {
            let position = line[line.range(of: " at ", options: .backwards)!.upperBound...]
            #expect(position.wholeMatch(of: /[0-9]+\.[0-9] s/) != nil, "not rounded: \(line)")
        }
    }
}
