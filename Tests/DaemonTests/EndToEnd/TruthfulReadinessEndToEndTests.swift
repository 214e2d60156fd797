import AsyncSignals
import Foundation
import MIDI
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// Readiness that tells the truth, seen as a user sees it: the real `speakerd` and `composer-cli`
/// on a private bus with the fake BlueZ, each scenario ending in a song rendered into a WAV and
/// checked note by note (or in the one line a failed `play` prints, and then the song once the
/// user fixed the cause).
///
/// Serialized and bounded: each wait ends as soon as its condition holds; the bounds only turn a
/// hang into a failure.
@Suite("Truthful readiness end to end: speakerd and composer-cli", .serialized)
struct TruthfulReadinessEndToEndTests {
    typealias Speaker = DaemonWorld.Speaker
    static let flip = DaemonWorld.flip

    /// speakerd on `fake`'s bus with a config file of its own; `body` runs while it does and gets
    /// the bus address and an API client. speakerd is stopped with SIGTERM afterwards and must
    /// exit cleanly.
    /// Runs a real speakerd for `body`; returns its log (stderr).
    @discardableResult
    func withSpeakerd(_ fake: DaemonWorld, config: String = "", soundfont: String = GatedPlayEndToEndTests.soundFont,
                      output: String, stateDirectory: String? = nil,
                      _ body: @escaping @Sendable (_ address: String, _ client: SpeakerdDBusClient) async throws -> Void) async throws -> String {
        let state = fake.state
        state.write(config, to: "speakerd.conf")
        let address = fake.world.address
        let client = try await fake.client()
        let run = try await ExecutableRun.run(
            "speakerd",
            ["--config", state.path + "/speakerd.conf", "--state-dir", stateDirectory ?? state.path, "--bus", address,
             "--audio-output", "file:" + output, "--soundfont", soundfont]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            try await eventually("speakerd answers on the bus") { (try? await client.status()) != nil }
            do { try await body(address, client) } catch {
                Issue.record(error, "the scenario stopped early")
                throw error
            }
        }
        #expect(run.status == 0, "speakerd did not stop cleanly: \(run.standardError.suffix(2_000))")
        return run.standardError
    }

    /// Plays the C major scale with `composer-cli play`, waits for its end, and checks the WAV.
    func playScale(_ address: String, _ client: SpeakerdDBusClient, into wav: String,
                   sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--bus", address])
        #expect(played.status == 0, "composer-cli play failed: \(played.standardError)", sourceLocation: sourceLocation)
        try await eventually("the song has played to its end", within: .seconds(30)) {
            let state = try await client.status().playback.state
            return state != "waiting" && state != "playing"
        }
        try expectWholeScaleInTune(wav: wav, song: try MIDIFileReader.read(contentsOfFile: songPath),
                                   sourceLocation: sourceLocation)
    }

    @Test("first run, nothing known, auto_pick off: the user connects while speakerd scans, and the song plays")
    func firstRunManualPickThenPlay() async throws {
        let fake = try await DaemonWorld.start()  // python-dbusmock's stock bluez5 template
        try await fake.addAdapter()
        try await fake.addSpeaker()
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, config: "scan_seconds = 4\n", output: wav) { address, client in
            let waiting = try await client.status()
            #expect(waiting.readiness != "playbackReady")
            // While the first run scans, the user picks the speaker by address.
            let connected = try await ExecutableRun.run("composer-cli", ["connect", Self.flip.address, "--bus", address])
            #expect(connected.status == 0, "composer-cli connect failed: \(connected.standardError)")
            try await eventually("readiness follows the link to playbackReady") {
                try await client.status().readiness == "playbackReady"
            }
            let status = try await client.status()
            #expect(status.message == "Ready: JBL Flip 5")
            #expect(status.waitingFor == nil)
            try await playScale(address, client, into: wav)
            // The scan that was running when the user picked does not undo the pick.
            try await Task.sleep(for: .seconds(4))
            #expect(try await client.status().speaker?.address == Self.flip.address)
        }
        #expect(try fake.rememberedAddresses() == [Self.flip.address])
    }

    /// The moments: during the first attempts, inside a backoff gap, just before the connect
    /// step's 8 s timeout, and after start-up has finished.
    @Test("a known speaker off at boot that answers at some moment during or after start-up: readiness follows its link and the song plays",
          arguments: [Duration.milliseconds(600), .seconds(3), .milliseconds(7_500), .seconds(9)])
    func knownSpeakerAnswersLater(after delay: Duration) async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, output: wav) { address, client in
            try await Task.sleep(for: delay)
            #expect(try await client.status().readiness != "playbackReady", "the speaker is still off")
            try await fake.setConnectBehavior(Self.flip, "ok")
            try await fake.advertise(Self.flip, rssi: -50)  // it is in reach again
            try await eventually("the speaker is connected and playback ready", within: .seconds(30)) {
                let status = try await client.status()
                return status.speaker?.connected == true && status.readiness == "playbackReady"
            }
            try await playScale(address, client, into: wav)
        }
    }

    @Test("the soundfont missing: play fails at once naming it; once it is installed the same play works")
    func soundfontMissingThenInstalled() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([Self.flip])
        let soundfont = fake.state.path + "/fonts/gm.sf2"
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, soundfont: soundfont, output: wav) { address, client in
            try await eventually("the reason is the soundfont") {
                try await client.status().waitingFor?.code == NotReadyReason.Code.soundfontMissing.rawValue
            }
            let started = ContinuousClock.now
            let refused = try await ExecutableRun.run("composer-cli", ["play", try GatedPlayEndToEndTests.song(), "--bus", address])
            #expect(refused.status != 0)
            #expect(ContinuousClock.now - started < .seconds(10), "play waited instead of failing at once")
            #expect(refused.standardError.contains(soundfont), "the line names the file: \(refused.standardError)")
            #expect(refused.standardError.split(separator: "\n").count == 1, "one line: \(refused.standardError)")

            try FileManager.default.createDirectory(atPath: fake.state.path + "/fonts", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: GatedPlayEndToEndTests.soundFont, toPath: soundfont)
            try await playScale(address, client, into: wav)
        }
    }

    @Test("the output directory missing: play fails at once saying so; once it exists the same play works")
    func outputUnusableThenFixed() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([Self.flip])
        let directory = fake.state.path + "/out"
        let wav = directory + "/song.wav"
        try await withSpeakerd(fake, output: wav) { address, client in
            try await eventually("the reason is the output") {
                try await client.status().waitingFor?.code == NotReadyReason.Code.outputUnusable.rawValue
            }
            let status = try await client.status()
            #expect(status.message.hasPrefix("Cannot write \(wav)"), "\(status.message)")
            let refused = try await ExecutableRun.run("composer-cli", ["play", try GatedPlayEndToEndTests.song(), "--bus", address])
            #expect(refused.status != 0)
            #expect(refused.standardError.contains("cannot write \(wav)"), "\(refused.standardError)")
            try await eventually("start-up has finished") { (try? await client.startup()) != nil }
            let startup = try await client.startup()
            let backend = startup.operations.first { $0.name == StartupScenarios.Step.audioBackend }
            #expect(backend?.outcome == "failed" && backend?.reason?.contains("cannot write") == true,
                    "the start-up row says why: \(String(describing: backend))")

            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try await playScale(address, client, into: wav)
        }
    }

    @Test("a state directory that cannot be written: connect and status say speakers will not be remembered, the song still plays, and the write happens once it can")
    func stateDirectoryUnwritable() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        // A file where the state directory should be: no write can succeed, even as root.
        let stateDirectory = fake.state.path + "/state"
        fake.state.write("not a directory", to: "state")
        let wav = fake.state.path + "/song.wav"
        let log = try await withSpeakerd(fake, output: wav, stateDirectory: stateDirectory) { address, client in
            let connected = try await ExecutableRun.run("composer-cli", ["connect", Self.flip.address, "--bus", address, "--json"])
            #expect(connected.status == 0, "\(connected.standardError)")
            #expect(connected.standardOutput.contains("speakers will not be remembered"), "\(connected.standardOutput)")
            #expect(try await client.status().warnings.first?.contains("speakers will not be remembered") == true)
            let doctor = try await ExecutableRun.run("composer-cli", ["doctor", "--state-dir", stateDirectory, "--bus", address])
            #expect(doctor.status != 0, "doctor must fail an unwritable state directory")
            #expect(doctor.standardOutput.contains("speakers will not be remembered: \(stateDirectory) is not a directory"),
                    "\(doctor.standardOutput)")
            try await playScale(address, client, into: wav)

            // The cause goes away: the retried write lands, and the warning with it.
            try FileManager.default.removeItem(atPath: stateDirectory)
            try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: false)
            try await eventually("the speaker is written to the state file", within: .seconds(30)) {
                FileManager.default.fileExists(atPath: stateDirectory + "/state.json")
            }
            try await eventually("the warning clears") { try await client.status().warnings.isEmpty }
        }
        // The log tells one story: nothing was moved (there is no file to move; the path is a
        // file), the speaker could not be remembered, then it was, once the directory was there.
        let lines = log.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.contains("set aside as") || $0.contains("moved to") }, "the log says something moved:\n\(log)")
        let aside = lines.filter { $0.contains("moved aside") }
        #expect(!aside.isEmpty && aside.allSatisfy { $0.contains("not moved aside") || $0.contains("could not be moved aside") },
                "\(log)")
        #expect(lines.filter { $0.contains("speakers will not be remembered") }.count == 1, "logged when it begins, once:\n\(log)")
        #expect(lines.filter { $0.contains("writable again") }.count == 1, "\(log)")
    }

    @Test("after a reconnect, playbackReady follows the link at once, not a start-up step's timeout")
    func readinessFollowsTheLinkAfterAReconnect() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, output: wav) { address, client in
            try await eventually("playback ready at start") { try await client.status().readiness == "playbackReady" }
            try await fake.dropLink(reason: "Timeout")
            try await eventually("the link loss is seen") { try await client.status().speaker?.connected == false }
            // Poll both: the moment the link is back, and the moment readiness is.
            var linkBack: ContinuousClock.Instant?
            var ready: ContinuousClock.Instant?
            let deadline = ContinuousClock.now + .seconds(30)
            while ready == nil, ContinuousClock.now < deadline {
                let status = try await client.status()
                if linkBack == nil, status.speaker?.connected == true { linkBack = .now }
                if status.readiness == "playbackReady" { ready = .now }
                try await Task.sleep(for: .milliseconds(20))
            }
            let back = try #require(linkBack, "the speaker never reconnected")
            let readyAt = try #require(ready, "readiness never came back")
            #expect(readyAt - back < .milliseconds(1_000), "playbackReady came \(readyAt - back) after the link")
            try await playScale(address, client, into: wav)
        }
    }

    @Test("Ctrl-C on a waiting play --wait cancels the request: it never starts when the speaker comes")
    func interruptedWaitingPlayNeverStarts() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, output: wav) { address, client in
            let song = try GatedPlayEndToEndTests.song()
            let interrupted = try await ExecutableRun.run("composer-cli", ["play", song, "--wait", "--bus", address]) { pid in
                try await eventually("the request waits for the speaker") {
                    try await client.status().playback.state == "waiting"
                }
                kill(pid, SIGINT)
            }
            #expect(interrupted.status != 0)
            try await eventually("the daemon dropped the request") {
                try await client.status().playback.state != "waiting"
            }
            // The speaker comes: nothing starts, because nobody is asking any more.
            try await fake.setConnectBehavior(Self.flip, "ok")
            try await fake.advertise(Self.flip, rssi: -50)
            try await eventually("playback ready", within: .seconds(30)) { try await client.status().readiness == "playbackReady" }
            try await Task.sleep(for: .seconds(1))
            #expect(try await client.status().playback.state != "playing", "a cancelled request started playing")
            #expect(!FileManager.default.fileExists(atPath: wav), "a cancelled request wrote audio")
        }
    }

    @Test("connect refuses a phone in our words, and --force connects it anyway")
    func connectRefusesAPhoneUnlessForced() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await fake.addAdapter()
        let phone = "44:55:66:DD:EE:FF"
        #expect(try await fake.world.send("add-phone \(phone) Somebody's phone") == "ok")
        let wav = fake.state.path + "/song.wav"
        try await withSpeakerd(fake, output: wav) { address, client in
            let refused = try await ExecutableRun.run("composer-cli", ["connect", phone, "--bus", address])
            #expect(refused.status != 0)
            #expect(refused.standardError == "composer-cli: Somebody's phone (\(phone)) is not a speaker: its class of device is phone; "
                    + "'composer-cli connect --force \(phone)' connects it anyway\n", "\(refused.standardError)")
            #expect(try await client.status().speaker == nil, "nothing was chosen")
            let forced = try await ExecutableRun.run("composer-cli", ["connect", "--force", phone, "--bus", address])
            #expect(forced.status == 0, "\(forced.standardError)")
            #expect(try await client.status().speaker?.connected == true)
        }
    }

    @Test("forget says it removes the pairing and does; --keep-pairing leaves BlueZ's pairing alone")
    func forgetSaysWhatHappensToThePairing() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([Self.flip])
        let removals = { @Sendable () async throws -> Int in
            let reply = try await fake.mock("GetMethodCalls", .string("RemoveDevice"), path: "/org/bluez/hci0",
                                            interface: "org.freedesktop.DBus.Mock")
            guard case .array(_, let calls)? = reply.first?.unwrappingVariants else { return 0 }
            return calls.count
        }
        try await withSpeakerd(fake, output: fake.state.path + "/song.wav") { address, client in
            let kept = try await ExecutableRun.run("composer-cli", ["forget", "--keep-pairing", Self.flip.address, "--bus", address])
            #expect(kept.status == 0, "\(kept.standardError)")
            #expect(kept.standardOutput.hasPrefix("Forgot \(Self.flip.address); its Bluetooth pairing is kept."), "\(kept.standardOutput)")
            #expect(try await removals() == 0, "--keep-pairing removed the pairing")
            #expect(try await client.speakers().speakers.isEmpty)

            let connected = try await ExecutableRun.run("composer-cli", ["connect", Self.flip.address, "--bus", address])
            #expect(connected.status == 0, "\(connected.standardError)")
            let forgot = try await ExecutableRun.run("composer-cli", ["forget", Self.flip.address, "--bus", address])
            #expect(forgot.status == 0, "\(forgot.standardError)")
            #expect(forgot.standardOutput.hasPrefix("Forgot \(Self.flip.address) and removed its Bluetooth pairing"),
                    "\(forgot.standardOutput)")
            #expect(try await removals() == 1, "forget must remove BlueZ's pairing")
            #expect(try await client.status().speaker == nil)
        }
    }

    @Test("disconnect says in our words when there is nothing to disconnect, and a second disconnect says the speaker already is")
    func disconnectInOurWords() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        try await withSpeakerd(fake, output: fake.state.path + "/song.wav") { address, client in
            try await eventually("start-up waits for a pick") { try await client.status().waitingFor?.code == "waitingForPick" }
            let nothing = try await ExecutableRun.run("composer-cli", ["disconnect", "--bus", address])
            #expect(nothing.status != 0)
            #expect(nothing.standardError == "composer-cli: no speaker is connected, so there is nothing to disconnect\n")
            let connected = try await ExecutableRun.run("composer-cli", ["connect", Self.flip.address, "--bus", address])
            #expect(connected.status == 0, "\(connected.standardError)")
            let first = try await ExecutableRun.run("composer-cli", ["disconnect", "--bus", address])
            #expect(first.status == 0, "\(first.standardError)")
            #expect(first.standardOutput.hasPrefix("Status:    Disconnected from JBL Flip 5 as asked"), "\(first.standardOutput)")
            let second = try await ExecutableRun.run("composer-cli", ["disconnect", "--bus", address])
            #expect(second.status != 0)
            #expect(second.standardError
                    == "composer-cli: JBL Flip 5 is already disconnected; 'composer-cli connect' reconnects it\n")
        }
    }
}
