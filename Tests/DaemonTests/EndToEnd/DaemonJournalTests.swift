import AsyncSignals
@testable import BlueZ
import Foundation
import Logging
@testable import Daemon
@testable import Systemd
import Synchronization
import TestSupport
import Testing
@testable import Configuration

/// What `journalctl -u speakerd` shows after a person's session with the real speakerd: one line
/// at info for each thing that happened to the speaker or a song, naming the speaker by name and
/// address; a condition that repeats (a speaker left off while speakerd retries, no logind on
/// the bus) said once; no warning for work that is expected to take time (the soundfont preload).
@Suite("speakerd's journal: what happened, once, naming the speaker", .serialized)
struct DaemonJournalTests {
    static let speaker = "JBL Flip 5 (11:22:33:AA:BB:CC)"

    /// One journal line: the syslog priority speakerd gave it and its message.
    struct Line: CustomStringConvertible {
        let priority: Int
        let message: String
        var description: String { "<\(priority)>\(message)" }

        /// `<6>speakerd: connected to …` → priority 6, "connected to …"; nil for other output.
        init?(_ text: Substring) {
            guard let close = text.firstIndex(of: ">"), text.hasPrefix("<"),
                  let priority = Int(text[text.index(after: text.startIndex)..<close]),
                  let colon = text[close...].range(of: ": ") else { return nil }
            self.priority = priority
            message = String(text[colon.upperBound...])
        }
    }

    @Test("first run with auto_pick, a song, the speaker switched off and on, a disconnect and a refused play: each said once at info")
    func aSessionsJournal() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        #expect(try await fake.world.send("add-speaker 11:22:33:AA:BB:CC JBL Flip 5") == "ok")
        #expect(try await fake.world.send("add-phone AA:BB:CC:DD:EE:FF Somebody's phone") == "ok")
        let state = fake.state
        state.write("auto_pick = yes\nscan_seconds = 1\nreconnect_max_seconds = 2\n", to: "speakerd.conf")
        let song = try GatedPlayEndToEndTests.song()
        let address = fake.world.address
        let failedConnects = Mutex(0)
        let daemon = try await ExecutableRun.run(
            "speakerd", ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", address,
                         "--audio-output", "file:\(state.path)/out.wav", "--soundfont", GatedPlayEndToEndTests.soundFont],
            journal: true  // as under systemd: the journal reads each line's priority
        ) { pid in
            defer { kill(pid, SIGTERM) }
            let client = try await fake.client()
            try await eventually("speakerd picked, connected and is ready", within: .seconds(30)) {
                (try? await client.status())?.readiness == "playbackReady"
            }
            let played = try await ExecutableRun.run("composer-cli", ["play", song, "--wait", "--bus", address])
            #expect(played.status == 0, "\(played.standardError)")

            // Switched off: the link drops (BlueZ's reason: timeout) and every retry fails alike.
            let before = try await fake.calls("Connect")
            #expect(try await fake.world.send("speaker-off 11:22:33:AA:BB:CC") == "ok")
            try await eventually("speakerd retried three times", within: .seconds(40)) {
                try await fake.calls("Connect") >= before + 3
            }
            let failed = try await fake.calls("Connect") - before
            failedConnects.withLock { $0 = failed }
            #expect(try await fake.world.send("speaker-on 11:22:33:AA:BB:CC") == "ok")
            try await eventually("speakerd reconnected by itself", within: .seconds(40)) {
                (try? await client.status())?.readiness == "playbackReady"
            }

            let disconnected = try await ExecutableRun.run("composer-cli", ["disconnect", "--bus", address])
            #expect(disconnected.status == 0, "\(disconnected.standardError)")
            let refused = try await ExecutableRun.run("composer-cli", ["play", song, "--bus", address])
            #expect(refused.status != 0, "a play after the user's disconnect must fail at once")
        }
        #expect(daemon.status == 0, "speakerd did not stop cleanly: \(daemon.standardError.suffix(2_000))")

        let journal = daemon.standardError.split(separator: "\n").compactMap(Line.init)
        let transcript = journal.map(\.description).joined(separator: "\n")
        func said(_ prefix: String) -> [Line] { journal.filter { $0.message.hasPrefix(prefix) } }
        let speaker = Self.speaker
        let song_ = "test-c-major-scale.mid"

        // One line at info for each event, with the speaker's name and address, in order.
        let connected = try #require(journal.firstIndex { $0.message.hasPrefix("connected to \(speaker)") })
        let ready = try #require(journal.firstIndex { $0.message.hasPrefix("ready to play on \(speaker)") })
        #expect(connected < ready, "ready to play said before connected:\n\(transcript)")
        let events: [(String, Int)] = [
            ("picked \(speaker) from the scan, the only candidate (auto_pick)", 1),  // the phone is no candidate
            ("connected to \(speaker), picked by scan (auto_pick)", 1),  // the pick; speakerd's own reconnect is said as such
            ("reconnected to \(speaker)", 1),
            ("ready to play on \(speaker)", 2),
            ("playing \(song_) on \(speaker)", 1),
            ("finished playing \(song_) on \(speaker)", 1),
            ("\(speaker) disconnected: ", 1),  // the drop, with BlueZ's reason; the user's disconnect is said once, below
            ("disconnected \(speaker) as asked", 1),
            ("not playing \(song_) on \(speaker): ", 1),
        ]
        for (prefix, count) in events {
            let lines = said(prefix)
            #expect(lines.count == count, "'\(prefix)…' logged \(lines.count) times, not \(count):\n\(transcript)")
            #expect(lines.allSatisfy { $0.priority == 6 }, "'\(prefix)…' not at info:\n\(transcript)")
        }

        #expect(said("\(speaker) disconnected: ").first?.message.hasSuffix(
            "disconnected: link lost: the speaker went out of range or lost power") == true, "\(transcript)")

        // A speaker left off: every retry failed alike, and the journal says so once.
        #expect(failedConnects.withLock { $0 } >= 3)
        #expect(said("connecting \(speaker) failed: ").count == 1, "\(failedConnects.withLock { $0 }) failed connects:\n\(transcript)")
        let outOfReach = said("not ready to play on \(speaker): JBL Flip 5 is out of reach")
        #expect(outOfReach.count == 1, "\(failedConnects.withLock { $0 }) retries:\n\(transcript)")
        #expect(outOfReach.allSatisfy { $0.priority <= 6 })

        // Repeated conditions once; nothing expected reads as a warning.
        #expect(journal.filter { $0.message.contains("no logind on the bus") }.count <= 1, "\(transcript)")
        #expect(!journal.contains { $0.message.contains("preload soundfont") }, "the soundfont preload was called slow:\n\(transcript)")
        // A quick block may be named slow when the machine is loaded (the sanitizer build beside
        // other suites); nothing else in a session where nothing went wrong is a warning.
        let warnings = journal.filter { $0.priority <= 4 && !$0.message.hasPrefix("slow readiness block") }
        #expect(warnings.isEmpty, "a warning or worse in a session where nothing went wrong:\n\(transcript)")
    }

    @Test("a known speaker that connects by itself while another is being retried is one line, not two")
    func inboundConnectSaidOnce() async throws {
        let flip = DaemonWorld.flip.bluetoothAddress, charge = DaemonWorld.charge.bluetoothAddress
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: flip, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, trusted: true),
                      Device(address: charge, name: "JBL Charge 4", deviceClass: 0x240414, paired: true, trusted: true)])
        // Both are off at boot: start-up tries them, then waits for a pick while retrying the last one.
        await bluez.setBehaviour(.fail(FakeBlueZClient.pageTimeout), for: flip)
        await bluez.setBehaviour(.fail(FakeBlueZClient.pageTimeout), for: charge)
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip, DaemonWorld.charge], in: state)
        let journal = Journal()
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { line in journal.withLock { $0.append(line) } } }
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: DaemonDependencies(connectBus: nil, makeBlueZ: { _ in bluez }), notifier: nil, logger: logger)
        await daemon.start()

        // Someone presses the Charge's button: it connects to the box by itself.
        await bluez.updateDevice(charge) { $0.connected = true }
        try await eventually("the speaker that connected by itself is the link") {
            let link = await daemon.inputs.link
            return link.connected && link.target?.address == charge
        }
        let said = journal.withLock { $0 }.filter { $0.contains("JBL Charge 4 (\(charge))") && $0.contains("connected") }
        #expect(said == ["<6>speakerd: connected to JBL Charge 4 (\(charge)), it connected by itself\n"], "\(journal.withLock { $0 })")
        await daemon.shutdown()
    }
}
