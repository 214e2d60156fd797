import Foundation
import Glibc
import Synchronization
import MIDI
import SpeakerdAPI
@testable import Playback
import TestSupport
import Testing

/// `composer-cli play` with the composer's controls, through the real programs: the controls
/// travel with the song to speakerd, which plays it as `render` would write it, or refuses it in
/// one line when the song cannot be played that way.
@Suite("play with the composer's controls, end to end")
struct ArrangedPlayEndToEndTests {
    @Test("play --transpose 7 --tempo 150% --wait: the speaker hears every note of the scale a fifth up, in two thirds of the time")
    func transposedAndFaster() async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        let controls = ArrangementText(tempo: "150%", transpose: 7)
        let expected = try controls.arrangement().arrange(try MIDIFileReader.read(contentsOfFile: songPath))
        let wav = try await Self.withReadySpeakerd { bus, _ in
            let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--transpose", "7", "--tempo", "150%",
                                                                      "--wait", "--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            #expect(played.standardError.isEmpty, "\(played.standardError)")
        }
        expectWholeScaleInTune(wav: try #require(wav, "speakerd wrote no WAV"), song: expected)
    }

    @Test("play --from past the song's end is refused in one line naming the song and the control, and nothing plays")
    func refusedWhenTheSongCannotBePlayedSo() async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        let wav = try await Self.withReadySpeakerd { bus, client in
            let refused = try await ExecutableRun.run("composer-cli", ["play", songPath, "--from", "99", "--bus", bus])
            #expect(refused.status != 0)
            let lines = refused.standardError.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(refused.standardError)")
            #expect(refused.standardError.contains("cannot play test-c-major-scale.mid: "), "\(refused.standardError)")
            #expect(refused.standardError.contains("99"), "names the bar asked for: \(refused.standardError)")
            #expect(try await client.status().playback.state == "idle")

            let malformed = try await ExecutableRun.run("composer-cli", ["play", songPath, "--tempo", "fast", "--bus", bus])
            #expect(malformed.status != 0)
            #expect(malformed.standardError.contains("--tempo: 'fast' is not a tempo"), "\(malformed.standardError)")
        }
        #expect((wav?.seconds ?? 0) < 0.5, "a refused song reached the output: \(wav?.seconds ?? 0) s")
    }

    @Test("a song started with --tempo shows its bar, beat, tempo heard and controls in status from its first second, in the written song's bars")
    func statusOfASongStartedWithControls() async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        _ = try await Self.withReadySpeakerd { bus, client in
            let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--tempo", "50%", "--from", "2", "--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            let status = try await ExecutableRun.run("composer-cli", ["status", "--json", "--bus", bus])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.standardOutput.utf8)) as? [String: Any])
            let playback = try #require(object["playback"] as? [String: Any], "\(status.standardOutput)")
            let place = try #require(playback["musicalPosition"] as? [String: Any], "no bar and beat: \(status.standardOutput)")
            #expect(place["bar"] as? Int == 2 && place["bars"] as? Int == 2 && place["bpm"] as? Double == 60, "\(place)")
            let controls = try #require(playback["controls"] as? [String: Any], "no controls: \(status.standardOutput)")
            #expect(controls["tempo"] as? String == "50%", "\(controls)")
            let position = try #require(playback["positionSeconds"] as? Double)
            #expect(position >= 2 && position < 4, "the position is in the written song (bar 2 starts at 2 s): \(position)")
            _ = try await client.stop()
        }
    }

    @Test("play --wait --json ends with one record: the song, how it ended, and its status as it started and as it ended")
    func waitJSONRecord() async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        _ = try await Self.withReadySpeakerd { bus, _ in
            let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--wait", "--json", "--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            let record = try #require(try JSONSerialization.jsonObject(with: Data(played.standardOutput.utf8)) as? [String: Any],
                                      "one JSON record: \(played.standardOutput)")
            #expect(Set(record.keys) == ["file", "outcome", "error", "replacedBy", "started", "ended"], "\(record.keys)")
            #expect(record["file"] as? String == "test-c-major-scale.mid" && record["outcome"] as? String == "finished"
                        && record["error"] is NSNull, "\(record)")
            let started = try #require((record["started"] as? [String: Any])?["playback"] as? [String: Any])
            #expect(started["state"] as? String == "playing" && started["file"] as? String == "test-c-major-scale.mid", "\(started)")
            #expect(((record["ended"] as? [String: Any])?["playback"] as? [String: Any])?["state"] as? String == "idle")
        }
    }

    @Test("Ctrl-C on play --wait stops the song and says so in one line; with --detach the song plays on, and the line says how to stop it",
          arguments: [false, true])
    func interruptedWait(detached: Bool) async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        _ = try await Self.withReadySpeakerd { bus, client in
            let sent = Mutex<ContinuousClock.Instant?>(nil)
            let run = try await ExecutableRun.run("composer-cli", ["play", songPath, "--wait", "--bus", bus] + (detached ? ["--detach"] : [])) { pid in
                try await eventually("the song plays") { try await client.status().playback.state == "playing" }
                sent.withLock { $0 = .now }
                kill(pid, SIGINT)
            }
            let took = ContinuousClock.now - (sent.withLock { $0 } ?? .now)
            #expect(run.status == 130, "\(run.standardError)")
            #expect(took < .milliseconds(1500), "composer-cli ended \(took) after Ctrl-C")
            let state = try await client.status().playback.state
            if detached {
                #expect(run.standardError == "composer-cli: interrupted: test-c-major-scale.mid plays on ('composer-cli stop' stops it)\n")
                #expect(state == "playing", "--detach left the song \(state)")
                _ = try await client.stop()
            } else {
                #expect(run.standardError == "composer-cli: interrupted: stopped test-c-major-scale.mid (play --wait --detach leaves a song playing)\n")
                #expect(state == "stopped", "the song is \(state) after Ctrl-C")
            }
        }
        let refused = try await ExecutableRun.run("composer-cli", ["play", songPath, "--detach"])
        #expect(refused.status != 0 && refused.standardError.contains("--detach goes with --wait"), "\(refused.standardError)")
    }

    /// speakerd on the fake BlueZ with the Flip known and connected, its output a WAV file;
    /// `body` runs once it is ready to play. Returns the WAV it wrote (nil for none), read once
    /// speakerd has stopped and before its state directory goes.
    static func withReadySpeakerd(_ body: @escaping @Sendable (String, SpeakerdDBusClient) async throws -> Void) async throws -> WAVFile? {
        let fake = try await DaemonWorld.start(.speakerd)
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        let state = fake.state
        state.write("", to: "speakerd.conf")
        let wav = state.path + "/song.wav"
        let address = fake.world.address
        let daemon = try await ExecutableRun.run(
            "speakerd",
            ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", address,
             "--audio-output", "file:" + wav, "--soundfont", GatedPlayEndToEndTests.soundFont]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            let client = try await fake.client()
            try await eventually("speakerd is ready to play", within: .seconds(30)) {
                (try? await client.status().readiness) == "playbackReady"
            }
            try await body(address, client)
        }
        #expect(daemon.status == 0, "speakerd: \(daemon.standardError)")
        defer { _ = fake }
        return FileManager.default.fileExists(atPath: wav) ? try WAVFile(path: wav) : nil
    }
}
