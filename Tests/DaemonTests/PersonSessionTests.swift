import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
import TestSupport
import Testing

/// What a person does by hand, through the real programs: the fake BlueZ set up with
/// scripts/fake-bluez's own commands, the real speakerd, composer-cli on a pseudo-terminal
/// (Tests/Tools/pty-session types the keys and keeps the screen).
@Suite("A person at a terminal: scan and pick, play, pause, stop, a speaker switched off and on", .serialized)
struct PersonSessionTests {
    static let ptySession = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Tools/pty-session").standardized.path
    static let composerCLI = ExecutableRun.productsDirectory.appendingPathComponent("composer-cli").path

    /// A world with two speakers and a phone, added the way a newcomer adds them, and a running
    /// speakerd (scan_seconds = 1 unless told) for `body`; speakerd gets SIGTERM afterwards.
    /// `beforeStart` are more fake-bluez commands, sent before speakerd starts.
    func withSpeakerd(remembering known: [DaemonWorld.Speaker] = [], scanSeconds: Int = 1, beforeStart: [String] = [],
                      _ body: @escaping @Sendable (DaemonWorld, SpeakerdDBusClient) async throws -> Void) async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        #expect(try await fake.world.send("add-speaker 11:22:33:AA:BB:CC JBL Flip 5") == "ok")
        #expect(try await fake.world.send("add-speaker 22:33:44:BB:CC:DD Bose Mini") == "ok")
        #expect(try await fake.world.send("add-phone AA:BB:CC:DD:EE:FF Somebody's phone") == "ok")
        #expect(try await fake.world.send("speaker-off 00:00:00:00:00:01")
                == "error: no device 00:00:00:00:00:01: add it first (add-speaker or add-phone)")
        for command in beforeStart { #expect(try await fake.world.send(command) == "ok", "\(command)") }
        fake.remember(known)
        fake.state.write("scan_seconds = \(scanSeconds)\n", to: "speakerd.conf")
        let state = fake.state
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        let daemon = try await ExecutableRun.run(
            program: speakerd, ["--config", state.path + "/speakerd.conf", "--state-dir", state.path,
                                "--bus", fake.world.address, "--audio-output", "file:\(state.path)/out.wav",
                                "--soundfont", GatedPlayEndToEndTests.soundFont]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            let client = try await fake.client()
            try await eventually("speakerd answers") { (try? await client.status()) != nil }
            try await body(fake, client)
        }
        #expect(daemon.status == 0, "speakerd: \(daemon.standardError)")
    }

    /// Runs composer-cli on a pseudo-terminal, 100 columns wide, playing `steps`; `meanwhile`
    /// runs beside it (a step `{"touch": path}` tells it how far the screen got).
    func onTerminal(_ arguments: [String], steps: String,
                    meanwhile: (@Sendable () async throws -> Void)? = nil) async throws -> (screen: String, exit: Int32) {
        let run = try await ExecutableRun.run(program: "/usr/bin/python3",
                                              [Self.ptySession, "--columns", "100", "--timeout", "60", steps, "--",
                                               Self.composerCLI] + arguments,
                                              whileRunning: meanwhile.map { meanwhile in { @Sendable _ in try await meanwhile() } })
        #expect(run.status == 0, "pty-session: \(run.standardError)\n\(run.standardOutput)")
        let last = run.standardOutput.split(separator: "\n").last ?? ""
        let exit = Int32(last.replacingOccurrences(of: "pty-session: exit ", with: "")) ?? -1
        // What a person sees, without the colour and cursor sequences.
        let screen = run.standardOutput.replacingOccurrences(of: #"\x{1B}\[[0-9;?]*[A-Za-z]"#, with: "", options: .regularExpression)
            .replacingOccurrences(of: "\r", with: "")
        return (screen, exit)
    }

    @Test("scan on a terminal: a spinner, the speakers only, down arrow and Enter connect the second one")
    func pickSecondSpeaker() async throws {
        try await withSpeakerd { fake, client in
            let (screen, exit) = try await onTerminal(["scan", "--bus", fake.world.address], steps: #"""
                [{"expect": "Enter connects"}, {"send": "\u001b[B"}, {"expect": "Enter connects"}, {"send": "\r"},
                 {"expect": "Speaker:"}]
                """#)
            #expect(exit == 0, "\(screen)")
            #expect(screen.contains("Scanning for speakers… 0 s"))
            #expect(screen.contains("Speakers found, best first:"))
            #expect(screen.contains("JBL Flip 5") && screen.contains("Bose Mini"))
            #expect(!screen.contains("Somebody's phone"), "the phone must not be offered:\n\(screen)")
            // After the arrow key, the redrawn list marks the second row.
            #expect(screen.contains("›  2  Bose Mini"))
            #expect(screen.contains("Connecting Bose Mini (22:33:44:BB:CC:DD)…"))
            #expect(screen.contains("Speaker:   Bose Mini (22:33:44:BB:CC:DD), connected"))
            let status = try await client.status()
            #expect(status.speaker?.address == "22:33:44:BB:CC:DD" && status.speaker?.connected == true)
        }
    }

    @Test("scan on a terminal: a number picks the row; Esc leaves without connecting; piped, it only lists")
    func escapeAndNumber() async throws {
        try await withSpeakerd { fake, client in
            let left = try await onTerminal(["scan", "--bus", fake.world.address], steps: #"""
                [{"expect": "Enter connects"}, {"send": "2"}, {"expect": "Enter connects"}, {"send": "\u001b"}]
                """#)
            #expect(left.exit == 0)
            #expect(left.screen.contains("›  2  Bose Mini"))
            #expect(left.screen.contains("No speaker chosen."))
            #expect(try await client.status().speaker?.connected != true)

            let piped = try await ExecutableRun.run("composer-cli", ["scan", "--bus", fake.world.address])
            #expect(piped.status == 0)
            #expect(piped.standardError.isEmpty)
            let lines = piped.standardOutput.split(separator: "\n")
            #expect(lines.first?.hasPrefix("11:22:33:AA:BB:CC  JBL Flip 5") == true || lines.first?.hasPrefix("22:33:44:BB:CC:DD  Bose Mini") == true,
                    "a line per speaker, no heading: \(piped.standardOutput)")
            #expect(lines.count == 3 && !piped.standardOutput.contains("Scanning"), "\(piped.standardOutput)")
            #expect(lines.last == "(1 not shown: --all)", "the phone is counted, not listed: \(piped.standardOutput)")
        }
    }

    @Test("scan leaves the phone out and says so; scan --all lists it as not a speaker, piped and in --json")
    func scanAllListsThePhone() async throws {
        try await withSpeakerd { fake, _ in
            let bus = fake.world.address
            let speakers = try await ExecutableRun.run("composer-cli", ["scan", "--bus", bus])
            #expect(speakers.status == 0, "\(speakers.standardError)")
            #expect(speakers.standardOutput.contains("JBL Flip 5") && speakers.standardOutput.contains("Bose Mini"))
            #expect(!speakers.standardOutput.contains("Somebody's phone"), "\(speakers.standardOutput)")
            #expect(speakers.standardOutput.hasSuffix("\n(1 not shown: --all)\n"), "\(speakers.standardOutput)")

            let everything = try await ExecutableRun.run("composer-cli", ["scan", "--all", "--bus", bus])
            #expect(everything.status == 0, "\(everything.standardError)")
            let lines = everything.standardOutput.split(separator: "\n")
            #expect(lines.count == 3, "two speakers and the phone, a line each: \(everything.standardOutput)")
            #expect(lines.last?.hasPrefix("AA:BB:CC:DD:EE:FF  Somebody's phone") == true, "the phone comes last: \(everything.standardOutput)")
            #expect(lines.last?.hasSuffix("not a speaker") == true)
            #expect(!everything.standardOutput.contains("not shown"))

            let json = try await ExecutableRun.run("composer-cli", ["scan", "--json", "--bus", bus])
            let allJSON = try await ExecutableRun.run("composer-cli", ["scan", "--all", "--json", "--bus", bus])
            let listed = try Self.candidates(json.standardOutput), all = try Self.candidates(allJSON.standardOutput)
            #expect(listed.count == 2 && Set(listed.compactMap { $0["name"] as? String }) == ["JBL Flip 5", "Bose Mini"],
                    "the speakers only: \(json.standardOutput)")
            #expect(all.count == 3 && all.last?["name"] as? String == "Somebody's phone", "\(allJSON.standardOutput)")
            #expect(all.last?["audioSink"] as? Bool == false && all.first?["audioSink"] as? Bool == true)
            #expect(all.allSatisfy { Set($0.keys) == ["address", "name", "rssi", "known", "audioSink"] }, "the keys stay: \(all)")
        }
    }

    @Test("scan piped prints a speaker switched on mid-scan while the scan still runs, and lasts as long as --duration says; a duration out of range is one clear line")
    func pipedScanStreams() async throws {
        try await withSpeakerd { fake, _ in
            let sony = DaemonWorld.Speaker(address: "33:44:55:CC:DD:EE", name: "Sony SRS")
            let started = ContinuousClock.now
            let run = try await ExecutableRun.run("composer-cli", ["scan", "--duration", "6", "--bus", fake.world.address]) { _, output in
                // The scan runs (speakerd announces what it hears from now on); the Sony is switched on.
                try await Task.sleep(for: .milliseconds(500))
                try await fake.addSpeaker(sony)
                try await eventually("the Sony's line is out before the scan ends") { output().contains("33:44:55:CC:DD:EE  Sony SRS  -") }
                #expect(ContinuousClock.now - started < .seconds(6), "the line came only at the end of the scan")
                #expect(output().contains("11:22:33:AA:BB:CC  JBL Flip 5"),
                        "the speaker BlueZ already knew comes with the first announcement, not at the scan's end: \(output())")
            }
            #expect(run.status == 0, "\(run.standardError)")
            #expect(ContinuousClock.now - started >= .seconds(6), "a 6 s scan ended early")
            let lines = run.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.contains("Sony SRS") }.count == 1, "printed once: \(run.standardOutput)")
            #expect(lines.contains { $0.hasPrefix("11:22:33:AA:BB:CC  JBL Flip 5") } && lines.last == "(1 not shown: --all)",
                    "\(run.standardOutput)")

            let tooLong = try await ExecutableRun.run("composer-cli", ["scan", "--duration", "301", "--bus", fake.world.address])
            #expect(tooLong.status != 0)
            #expect(tooLong.standardError.contains("--duration: a scan lasts 1 to 300 seconds, not 301"), "\(tooLong.standardError)")
        }
    }

    /// The `candidates` of `scan --json`.
    static func candidates(_ json: String) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return try #require(object?["candidates"] as? [[String: Any]], "no candidates in \(json)")
    }

    @Test("a paused song shows as paused; stop ends a waiting play with exit 0 and a stopped line")
    func pauseAndStop() async throws {
        let song = try GatedPlayEndToEndTests.song()
        try await withSpeakerd(remembering: [DaemonWorld.flip]) { fake, client in
            let bus = fake.world.address
            try await eventually("the known speaker is connected and ready") {
                try await client.status().readiness == "playbackReady"
            }
            let waiting = try await ExecutableRun.run("composer-cli", ["play", "--wait", song, "--bus", bus]) { _ in
                try await eventually("the song plays") { try await client.status().playback.state == "playing" }
                let paused = try await ExecutableRun.run("composer-cli", ["pause", "--bus", bus])
                #expect(paused.status == 0)
                #expect(paused.standardOutput.hasPrefix("Status:    Paused test-c-major-scale.mid on JBL Flip 5\n"),
                        "\(paused.standardOutput)")
                #expect(paused.standardOutput.contains("Playback:  paused test-c-major-scale.mid"))
                let status = try await ExecutableRun.run("composer-cli", ["status", "--bus", bus])
                #expect(status.standardOutput.hasPrefix("Status:    Paused test-c-major-scale.mid on JBL Flip 5\n"))
                let json = try await ExecutableRun.run("composer-cli", ["status", "--json", "--bus", bus])
                #expect(json.standardOutput.contains("\"message\" : \"Paused test-c-major-scale.mid on JBL Flip 5\""),
                        "--json carries the daemon's own sentence, which now says paused")
                let stopped = try await ExecutableRun.run("composer-cli", ["stop", "--bus", bus])
                #expect(stopped.status == 0)
            }
            #expect(waiting.status == 0, "play --wait after stop: \(waiting.standardError)")
            #expect(waiting.standardError.isEmpty)
            #expect(waiting.standardOutput.range(of: #"\ntest-c-major-scale\.mid was stopped at 0:0\d\n$"#,
                                                 options: .regularExpression) != nil, "\(waiting.standardOutput)")
        }
    }

    @Test("fake-bluez's speaker-off drops the link and refuses reconnects; speaker-on lets speakerd reconnect")
    func speakerOffAndOn() async throws {
        try await withSpeakerd(remembering: [DaemonWorld.flip]) { fake, client in
            try await eventually("the known speaker is connected") { try await client.status().speaker?.connected == true }
            #expect(try await fake.world.send("speaker-off 11:22:33:aa:bb:cc") == "ok")
            try await eventually("speakerd saw the link drop") { try await client.status().speaker?.connected == false }
            let gone = try await client.status()
            #expect(gone.readiness != "playbackReady")
            let refused = try await ExecutableRun.run("composer-cli", ["connect", "11:22:33:AA:BB:CC", "--bus", fake.world.address])
            #expect(refused.status == 1, "connect to a switched-off speaker: \(refused.standardOutput)")
            #expect(refused.standardError.hasPrefix("composer-cli: ") && refused.standardError.filter { $0 == "\n" }.count == 1,
                    "\(refused.standardError)")
            #expect(try await fake.world.send("speaker-on 11:22:33:AA:BB:CC") == "ok")
            try await eventually("speakerd reconnected by itself", within: .seconds(40)) {
                try await client.status().speaker?.connected == true
            }
            #expect(try await fake.world.send("speaker-off 1122")
                    == "error: '1122' is not a Bluetooth address (expected the form 11:22:33:44:55:66)")
            #expect(try await fake.world.send("speaker-on") == "error: usage: speaker-on ADDRESS")
        }
    }

    @Test("scan on a terminal: a speaker switched on after the scan started joins the list while it still scans")
    func scanListGrows() async throws {
        let marks = TemporaryDirectory()
        try await withSpeakerd(remembering: [DaemonWorld.flip], scanSeconds: 6) { fake, _ in
            let scanning = marks.path + "/scanning"
            let (screen, exit) = try await onTerminal(["scan", "--bus", fake.world.address], steps: """
                [{"expect": "Scanning for speakers"}, {"touch": "\(scanning)"}, {"expect": "UE Boom 3"},
                 {"expect": "Enter connects"}, {"send": "\\u001b"}]
                """) {
                try await eventually("composer-cli shows its spinner and speakerd's discovery runs") {
                    guard FileManager.default.fileExists(atPath: scanning) else { return false }
                    return try await Self.discovering(fake)
                }
                #expect(try await fake.world.send("add-speaker 33:44:55:CC:DD:EE UE Boom 3") == "ok")
            }
            #expect(exit == 0, "\(screen)")
            let list = try #require(screen.range(of: "Speakers found, best first:"), "the scan never ended:\n\(screen)")
            let live = screen[..<list.lowerBound]
            #expect(live.contains("UE Boom 3"), "the new speaker was listed while the scan ran:\n\(screen)")
            #expect(live.contains("JBL Flip 5") && live.contains("Bose Mini"), "\(screen)")
            #expect(!live.contains("Somebody's phone"), "the phone is not listed without --all:\n\(screen)")
            #expect(screen[list.upperBound...].contains("UE Boom 3"), "and it is in the list to pick from")
            #expect(screen.contains("No speaker chosen."))
        }
    }

    /// Whether hci0 is discovering (python-dbusmock's adapter sets Discovering in StartDiscovery).
    static func discovering(_ fake: DaemonWorld) async throws -> Bool {
        let reply = try await fake.control.call(destination: "org.bluez", path: "/org/bluez/hci0",
                                                interface: "org.freedesktop.DBus.Properties", method: "Get",
                                                arguments: [.string("org.bluez.Adapter1"), .string("Discovering")])
        return reply.first?.unwrappingVariants == .bool(true)
    }

    @Test("play --wait on a terminal says with a spinner what speakerd waits for while the speaker is off, then plays the song")
    func playWaitShowsWhy() async throws {
        let song = try GatedPlayEndToEndTests.song()
        let marks = TemporaryDirectory()
        let flip = DaemonWorld.flip
        try await withSpeakerd(remembering: [flip]) { fake, client in
            try await eventually("the known speaker is connected") { try await client.status().speaker?.connected == true }
            #expect(try await fake.world.send("speaker-off \(flip.address)") == "ok")
            try await eventually("speakerd saw the link drop") { try await client.status().speaker?.connected == false }
            let shown = marks.path + "/waiting"
            // While speakerd retries the speaker, its reason goes back and forth between these two
            // (the countdown changes too): the screen shows whichever held when it drew the line,
            // and the status read a moment later may already say the other.
            let retrying = [NotReadyReason.connecting(flip.name).message,
                            String(NotReadyReason.unreachable(flip.name, retryIn: nil).message.prefix { $0 != ";" })]
            let reasons = Mutex<[String]>([])
            if let reason = try await client.status().waitingFor?.message { reasons.withLock { $0.append(reason) } }
            let (screen, exit) = try await onTerminal(["play", "--wait", song, "--bus", fake.world.address], steps: """
                [{"expect": "test-c-major-scale.mid: waiting — "}, {"touch": "\(shown)"}, {"expect": "♪ test-c-major-scale.mid"}]
                """) {
                try await eventually("the waiting line is on the screen") { FileManager.default.fileExists(atPath: shown) }
                let status = try await client.status()
                #expect(status.playback.state == "waiting" && status.speaker?.connected != true, "\(status)")
                if let reason = status.waitingFor?.message { reasons.withLock { $0.append(reason) } }
                #expect(try await fake.world.send("speaker-on \(flip.address)") == "ok")
                _ = try? await client.connect(flip.bluetoothAddress)  // the person switches it on and connects it
            }
            #expect(exit == 0, "\(screen)")
            let waitingLine = try #require(screen.split(separator: "\n").first { $0.contains("waiting — ") }, "\(screen)")
            #expect(waitingLine.contains("test-c-major-scale.mid: waiting — "))
            let given = reasons.withLock { $0 }
            #expect(!given.isEmpty, "speakerd gave no waiting reason")
            #expect(given.allSatisfy { reason in retrying.contains { reason.hasPrefix($0) } }, "speakerd's reasons: \(given)")
            #expect(retrying.contains { waitingLine.contains("waiting — " + $0) },
                    "the daemon's reason (\(retrying.joined(separator: " or "))) is on the screen:\n\(screen)")
            let playing = try #require(screen.range(of: "♪ test-c-major-scale.mid"), "\(screen)")
            #expect(screen[..<playing.lowerBound].contains("waiting — "), "the reason came before the song played")
            #expect(try await client.status().speaker?.connected == true)
        }
    }

    @Test("play --wait on a terminal: a pause from another shell turns the line into 'paused' and says how to continue; resume plays the song to its end")
    func playWaitSaysWhyItPaused() async throws {
        let song = try GatedPlayEndToEndTests.song()
        let marks = TemporaryDirectory()
        try await withSpeakerd(remembering: [DaemonWorld.flip]) { fake, client in
            let bus = fake.world.address
            try await eventually("the known speaker is connected and ready") {
                try await client.status().readiness == "playbackReady"
            }
            let playing = marks.path + "/playing", paused = marks.path + "/paused"
            let frozen = Mutex<[Double]>([])
            let (screen, exit) = try await onTerminal(["play", "--wait", song, "--bus", bus], steps: """
                [{"expect": "♪ test-c-major-scale.mid"}, {"touch": "\(playing)"},
                 {"expect": "⏸ test-c-major-scale.mid: paused"}, {"touch": "\(paused)"},
                 {"expect": "♪ test-c-major-scale.mid"}]
                """) {
                try await eventually("the progress line is on the screen") { FileManager.default.fileExists(atPath: playing) }
                // The person pauses from another shell.
                let pausing = try await ExecutableRun.run("composer-cli", ["pause", "--bus", bus])
                #expect(pausing.status == 0, "\(pausing.standardError)")
                try await eventually("the line says it is paused") { FileManager.default.fileExists(atPath: paused) }
                // It stays paused while the line says so: the position does not move.
                for _ in 0..<2 {
                    let status = try await client.status()
                    #expect(status.playback.state == "paused", "\(status.playback)")
                    if let position = status.playback.positionSeconds { frozen.withLock { $0.append(position) } }
                    try await Task.sleep(for: .milliseconds(600))
                }
                let resuming = try await ExecutableRun.run("composer-cli", ["resume", "--bus", bus])
                #expect(resuming.status == 0, "\(resuming.standardError)")
            }
            #expect(exit == 0, "play --wait after a pause and a resume: \(screen)")
            let positions = frozen.withLock { $0 }
            #expect(positions.count == 2 && positions.first == positions.last, "the song moved while paused: \(positions)")
            // The paused line: why (the user paused it, so no speaker is waited for) and what continues it.
            let pausedLine = try #require(screen.split(separator: "\n").last { $0.contains("⏸ test-c-major-scale.mid: paused") },
                                          "\(screen)")
            let why = "⏸ test-c-major-scale.mid: paused — 'composer-cli resume' continues it  "
            #expect(pausedLine.contains(why), "the line says it is paused and how to continue:\n\(screen)")
            #expect(pausedLine.range(of: #"⏸ test-c-major-scale\.mid: paused — 'composer-cli resume' continues it  0:0\d / 0:\d\d"#,
                                     options: .regularExpression) != nil, "where it stopped, of how long: \(pausedLine)")
            #expect(!pausedLine.contains("when the speaker is back"), "nothing waits for the speaker: \(pausedLine)")
            #expect(!screen.contains("(paused)"), "not the bare state in place of the bar:\n\(screen)")
            // Resumed: the progress line comes back and the song plays to its end.
            let pausedAt = try #require(screen.range(of: why))
            #expect(screen[pausedAt.upperBound...].contains("♪ test-c-major-scale.mid"), "the line plays again after resume:\n\(screen)")
            #expect(screen.hasSuffix("test-c-major-scale.mid finished\n\npty-session: exit 0\n"), "\(screen.suffix(300))")
        }
    }

    @Test("startup through the real programs: piped a table, --svg a chart with a bar per operation, --json its keys, on a terminal the Gantt chart")
    func startupTimeline() async throws {
        let files = TemporaryDirectory()
        try await withSpeakerd(remembering: [DaemonWorld.flip]) { fake, client in
            let bus = fake.world.address
            try await eventually("start-up is over") { (try? await client.startup()) != nil }
            let report = try await client.startup()
            #expect(!report.operations.isEmpty)

            let piped = try await ExecutableRun.run("composer-cli", ["startup", "--bus", bus])
            #expect(piped.status == 0 && piped.standardError.isEmpty, "\(piped.standardError)")
            let lines = piped.standardOutput.split(separator: "\n")
            #expect(lines.first?.hasPrefix("Start-up (\(report.scenario)), ") == true, "\(piped.standardOutput)")
            #expect(lines.dropFirst().first?.hasPrefix("Operation") == true && lines.contains { $0.hasPrefix("Critical path: ") })
            for operation in report.operations {
                #expect(lines.contains { $0.hasPrefix(operation.name + " ") }, "\(operation.name) has a row: \(piped.standardOutput)")
            }
            #expect(!piped.standardOutput.contains("█"), "piped, no chart")

            let svg = files.path + "/startup.svg"
            let drawn = try await ExecutableRun.run("composer-cli", ["startup", "--svg", svg, "--bus", bus])
            #expect(drawn.status == 0, "\(drawn.standardError)")
            #expect(drawn.standardOutput.hasSuffix("\nWrote the chart to \(svg).\n"), "\(drawn.standardOutput)")
            let parsed = SVGElements.parse(try String(contentsOfFile: svg, encoding: .utf8))
            #expect(parsed.elements.first?.name == "svg")
            let bars = parsed.elements.filter { $0.name == "rect" && ($0.attributes["class"] ?? "").split(separator: " ").contains("bar") }
            #expect(bars.count == report.operations.count, "one bar per operation")

            // `--svg -`: the picture alone on standard output, not a file named "-".
            let streamed = try await ExecutableRun.run("composer-cli", ["startup", "--svg", "-", "--bus", bus])
            #expect(streamed.status == 0 && streamed.standardError.isEmpty, "\(streamed.standardError)")
            let picture = SVGElements.parse(streamed.standardOutput)
            #expect(picture.elements.first?.name == "svg", "\(streamed.standardOutput.prefix(200))")
            #expect(!streamed.standardOutput.contains("Wrote the chart"), "only the picture")
            #expect(picture.elements.filter { $0.name == "rect" && ($0.attributes["class"] ?? "").split(separator: " ").contains("bar") }.count
                    == report.operations.count)
            #expect(!FileManager.default.fileExists(atPath: "-"), "no file named '-'")
            // A named pipe nobody reads is one line at once, never an open that waits for ever.
            let fifo = files.path + "/nobody.svg"
            #expect(mkfifo(fifo, 0o644) == 0)
            let unread = try await ExecutableRun.run("composer-cli", ["startup", "--svg", fifo, "--bus", bus])
            #expect(unread.status == 1 && unread.standardError == "composer-cli: cannot write \(fifo): it is a named pipe nobody reads\n",
                    "\(unread.standardError)")

            let json = try await ExecutableRun.run("composer-cli", ["startup", "--json", "--bus", bus])
            #expect(json.status == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["scenario", "operations", "criticalPath", "run", "startedAfterMs"], "\(object.keys)")
            #expect(object["run"] as? Int == 1, "the boot's run: \(json.standardOutput)")
            let operations = try #require(object["operations"] as? [[String: Any]])
            #expect(operations.count == report.operations.count)
            for operation in operations {
                #expect(Set(["name", "startMs", "endMs", "outcome"]).isSubset(of: operation.keys), "\(operation)")
                #expect(Set(operation.keys).isSubset(of: ["name", "startMs", "endMs", "outcome", "reason"]), "\(operation)")
            }

            let (screen, exit) = try await onTerminal(["startup", "--bus", bus], steps: #"[{"expect": "critical path"}]"#)
            #expect(exit == 0, "\(screen)")
            #expect(screen.contains("Start-up (\(report.scenario)), ") && screen.contains("; * = critical path"), "\(screen)")
            #expect(screen.contains("█"), "the critical path's bars are drawn:\n\(screen)")
            for name in report.criticalPath { #expect(screen.contains("* " + name), "\(name) is marked critical:\n\(screen)") }
        }
    }
}
