import Foundation
import SpeakerdAPI
import TestSupport
import Testing

/// A playlist through the real programs: `play a.mid b.mid c.mid`, `queue`, `skip`, `clear`.
@Suite("A playlist, end to end")
struct PlaylistEndToEndTests {
    @Test("play with three files plays the first and queues the others; queue lists them, skip moves on, clear empties the rest")
    func playlist() async throws {
        let scale = try GatedPlayEndToEndTests.song()
        let songs = TemporaryDirectory()
        for name in ["a.mid", "b.mid", "c.mid"] {
            try FileManager.default.copyItem(atPath: scale, toPath: songs.path + "/" + name)
        }
        _ = try await ArrangedPlayEndToEndTests.withReadySpeakerd { bus, client in
            let played = try await ExecutableRun.run("composer-cli", ["play"] + ["a.mid", "b.mid", "c.mid"].map { songs.path + "/" + $0 }
                                                     + ["--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            #expect(played.standardOutput.contains("Next:      b.mid ("), "status names the next song: \(played.standardOutput)")
            #expect(played.standardOutput.contains("then 1 more"), "\(played.standardOutput)")

            let listed = try await ExecutableRun.run("composer-cli", ["queue", "--bus", bus])
            #expect(listed.status == 0, "\(listed.standardError)")
            let lines = listed.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("Now:  a.mid (") == true, "\(listed.standardOutput)")
            #expect(lines.dropFirst().map { $0.trimmingCharacters(in: .whitespaces).split(separator: " ").prefix(2).joined(separator: " ") }
                    == ["1 b.mid", "2 c.mid"], "\(listed.standardOutput)")
            let json = try await ExecutableRun.run("composer-cli", ["queue", "--json", "--bus", bus])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["current", "queue"], "\(json.standardOutput)")
            let queue = try #require(object["queue"] as? [[String: Any]])
            #expect(queue.map { $0["file"] as? String } == ["b.mid", "c.mid"])
            #expect(queue.allSatisfy { Set($0.keys) == ["position", "file", "durationSeconds"] })

            let skipped = try await ExecutableRun.run("composer-cli", ["skip", "--bus", bus])
            #expect(skipped.status == 0, "\(skipped.standardError)")
            #expect(try await client.status().playback.file == "b.mid", "skip plays the next song")
            let cleared = try await ExecutableRun.run("composer-cli", ["clear", "--bus", bus])
            #expect(cleared.status == 0, "\(cleared.standardError)")
            let after = try await client.status().playback
            #expect(after.file == "b.mid" && after.queue.isEmpty, "clear empties the queue and the song plays on: \(after)")
            _ = try await ExecutableRun.run("composer-cli", ["stop", "--bus", bus])
            let nothing = try await ExecutableRun.run("composer-cli", ["skip", "--bus", bus])
            #expect(nothing.status != 0 && nothing.standardError == "composer-cli: cannot skip: nothing is playing\n",
                    "\(nothing.standardError)")
        }
    }
}
