import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// What a person meets on a fresh box, through the real `speakerd` and `composer-cli` on a
/// private bus with the fake BlueZ: a box with no way to the speaker is never called ready, and a
/// device that cannot be opened is one line, not libasound's raw chatter.
@Suite("What a newcomer meets: the real programs", .serialized)
struct NewcomerEndToEndTests {
    static let flip = DaemonWorld.flip

    /// speakerd on `fake`'s bus with `output`, the speaker remembered, and an environment in which
    /// no sound server answers (nothing at PULSE_SERVER, an empty runtime directory); `body` runs
    /// while it does. Returns what speakerd wrote on stderr (its log).
    @discardableResult
    func withSpeakerd(_ fake: DaemonWorld, output: String, config: String = "", environment extra: [String: String] = [:],
                      _ body: @escaping @Sendable (_ address: String, _ client: SpeakerdDBusClient,
                                                   _ environment: [String: String]) async throws -> Void) async throws -> String {
        let state = fake.state
        state.write(config, to: "speakerd.conf")
        try FileManager.default.createDirectory(atPath: state.path + "/runtime", withIntermediateDirectories: true)
        let environment = ["PULSE_SERVER": "unix:\(state.path)/runtime/no-server", "XDG_RUNTIME_DIR": state.path + "/runtime"]
            .merging(extra) { $1 }
        let address = fake.world.address
        let client = try await fake.client()
        let run = try await ExecutableRun.run(
            "speakerd",
            ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", address,
             "--audio-output", output, "--soundfont", GatedPlayEndToEndTests.soundFont],
            environment: environment
        ) { pid in
            defer { kill(pid, SIGTERM) }
            try await eventually("speakerd answers on the bus") { (try? await client.status()) != nil }
            try await body(address, client, environment)
        }
        #expect(run.status == 0, "speakerd did not stop cleanly: \(run.standardError.suffix(2_000))")
        return run.standardError
    }

    @Test("auto with neither BlueALSA nor a sound server: never Ready; status, play and doctor say there is no Bluetooth audio path and how to fix it")
    func autoWithNoPathToTheSpeaker() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        let fix = "no Bluetooth audio path: install BlueALSA or PipeWire; composer-cli doctor"
        try await withSpeakerd(fake, output: "auto") { address, client, environment in
            try await eventually("the speaker is connected") { try await client.status().speaker?.connected == true }
            try await eventually("the reason is the missing audio path") {
                try await client.status().waitingFor?.code == NotReadyReason.Code.noBluetoothAudioPath.rawValue
            }
            let status = try await ExecutableRun.run("composer-cli", ["status", "--bus", address], environment: environment)
            #expect(!status.standardOutput.contains("Ready:"), "\(status.standardOutput)")
            // The label says what is missing, not the level's name ("speakerConnected").
            #expect(status.standardOutput.contains("Readiness: waiting for the speaker's audio path and the soundfont"), "\(status.standardOutput)")
            #expect(!status.standardOutput.contains("ALSA device"), "auto never names ALSA's default: \(status.standardOutput)")
            #expect(status.standardOutput.contains(fix.prefix(1).uppercased() + fix.dropFirst()), "\(status.standardOutput)")

            let started = ContinuousClock.now
            let refused = try await ExecutableRun.run("composer-cli", ["play", try GatedPlayEndToEndTests.song(), "--bus", address],
                                                      environment: environment)
            #expect(refused.status != 0)
            #expect(ContinuousClock.now - started < .seconds(10), "play waited instead of failing at once")
            #expect(refused.standardError.contains(fix), "\(refused.standardError)")
            #expect(refused.standardError.split(separator: "\n").count == 1, "one line: \(refused.standardError)")
            // With --json, the daemon's refusal is JSON too: its code, and the same sentence.
            let refusedJSON = try await ExecutableRun.run("composer-cli", ["play", try GatedPlayEndToEndTests.song(), "--bus", address, "--json"],
                                                          environment: environment)
            #expect(refusedJSON.status != 0)
            #expect(refusedJSON.standardOutput.isEmpty, "\(refusedJSON.standardOutput)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(refusedJSON.standardError.utf8)) as? [String: [String: String]],
                                      "not JSON: \(refusedJSON.standardError)")
            #expect(object["error"]?["code"] == "notReady", "\(refusedJSON.standardError)")
            #expect(object["error"]?["message"]?.contains(fix) == true, "\(refusedJSON.standardError)")

            let doctor = try await ExecutableRun.run(
                "composer-cli", ["doctor", "--bus", address, "--config", fake.state.path + "/speakerd.conf", "--state-dir", fake.state.path],
                environment: environment)
            #expect(doctor.status != 0, "doctor must fail a box with no way to the speaker: \(doctor.standardOutput)")
            #expect(doctor.standardOutput.contains(fix), "\(doctor.standardOutput)")
        }
    }

    @Test("an ALSA device named in audio_output that cannot be opened: one line saying why, and no raw 'ALSA lib' lines in speakerd's log")
    func alsaChatterStaysOutOfTheLog() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        let log = try await withSpeakerd(fake, output: "alsa:speakerd-no-such-pcm") { address, client, environment in
            try await eventually("playback ready", within: .seconds(30)) { try await client.status().readiness == "playbackReady" }
            let played = try await ExecutableRun.run("composer-cli", ["play", try GatedPlayEndToEndTests.song(), "--wait", "--bus", address],
                                                     environment: environment)
            #expect(played.status != 0)
            #expect(played.standardError.contains("alsa:speakerd-no-such-pcm could not be opened"), "\(played.standardError)")
            #expect(played.standardError.contains("ALSA says:"), "ALSA's reason is in the one line: \(played.standardError)")
        }
        #expect(!log.contains("ALSA lib"), "libasound's raw lines reached the log:\n\(log)")
        // The song that could not start is logged once, with why.
        #expect(Self.messages(log).filter { $0.contains("test-c-major-scale.mid") && $0.contains("could not be opened") }.count == 1,
                "\(log)")
    }

    @Test("speakerd running but not answering (stopped with SIGSTOP): composer-cli says it runs and did not answer, not 'is it running?'",
          .timeLimit(.minutes(2)))
    func runningButNotAnswering() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        try await withSpeakerd(fake, output: "null") { address, _, environment in
            // speakerd's process, as the bus knows it (its name's owner).
            let owner = try await ExecutableRun.run(program: "/usr/bin/dbus-send", [
                "--bus=\(address)", "--print-reply=literal", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:io.speakerd.Daemon",
            ])
            let pid = try #require(owner.standardOutput.split(separator: " ").last.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) },
                                   "no pid: \(owner.standardOutput) \(owner.standardError)")
            #expect(kill(pid, SIGSTOP) == 0)
            defer { kill(pid, SIGCONT) }
            let started = ContinuousClock.now
            let status = try await ExecutableRun.run("composer-cli", ["status", "--bus", address], environment: environment)
            #expect(status.status != 0)
            #expect(ContinuousClock.now - started < .seconds(40))
            #expect(status.standardError.hasPrefix("composer-cli: speakerd is running but did not answer Status within 30 s (busy or stuck)"),
                    "\(status.standardError)")
            #expect(!status.standardError.contains("is the service running"), "\(status.standardError)")
            #expect(status.standardError.split(separator: "\n").count == 1, "one line: \(status.standardError)")
        }
    }

    /// speakerd's log as messages: each line without its `<N>` priority (when there is one) and
    /// its logger's label.
    static func messages(_ log: String) -> [String] {
        log.split(separator: "\n").map { line -> String in
            var text = Substring(line)
            if text.hasPrefix("<"), let close = text.firstIndex(of: ">"), Int(text[text.index(after: text.startIndex)..<close]) != nil {
                text = text[text.index(after: close)...]
            }
            if let colon = text.range(of: ": "), text[..<colon.lowerBound].hasPrefix("speakerd") { text = text[colon.upperBound...] }
            return String(text)
        }
    }
}
