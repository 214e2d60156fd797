import DBus
import Foundation
import TestSupport
import Testing

/// Issue 24 item 4 through the real programs: the speaker is switched on while start-up's
/// `Connect` still pages it, and connects to the box by itself. speakerd once logged
/// "connectKnownSpeaker timed out after 8.0 s" after the speaker had been back for seconds.
@Suite("A speaker that connects by itself while start-up pages it: the real programs", .serialized)
struct InboundDuringStartupEndToEndTests {
    @Test("the speaker connects by itself while start-up's Connect pages: no timeout logged past 8 s, startup shows the step ok, the song plays")
    func inboundWhileStartupPages() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        // Paging: BlueZ answers start-up's Connect only when it is given up.
        try await fake.setConnectBehavior(DaemonWorld.flip, "hang")
        let wav = fake.state.path + "/song.wav"
        let log = try await TruthfulReadinessEndToEndTests().withSpeakerd(fake, output: wav) { address, client in
            try await eventually("start-up's Connect is out") { try await fake.calls("Connect") == 1 }
            // The speaker is switched on and connects to the box by itself, as bluetoothd shows it.
            try await fake.mock("UpdateProperties", .string("org.bluez.Device1"), .properties(["Connected": .bool(true)]),
                                path: DaemonWorld.flip.path, interface: "org.freedesktop.DBus.Mock")
            try await eventually("the speaker is seen connected") { try await client.status().speaker?.connected == true }
            // Past the step's 8 s budget: nothing may be said of it timing out.
            try await Task.sleep(for: .seconds(9))
            let startup = try await ExecutableRun.run("composer-cli", ["startup", "--json", "--bus", address])
            #expect(startup.status == 0, "\(startup.standardError)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(startup.standardOutput.utf8)) as? [String: Any])
            let operations = try #require(report["operations"] as? [[String: Any]], "\(startup.standardOutput)")
            let step = operations.first { ($0["name"] as? String) == "connectKnownSpeaker" }
            #expect(step?["outcome"] as? String == "ok", "connectKnownSpeaker: \(startup.standardOutput)")
            // The user's outcome: a song plays to the speaker.
            try await TruthfulReadinessEndToEndTests().playScale(address, client, into: wav)
        }
        let lines = NewcomerEndToEndTests.messages(log)
        #expect(!lines.contains { $0.contains("timed out") }, "a timeout was logged:\n\(log)")
        #expect(!lines.contains { $0.hasPrefix("warning: ") || $0.hasPrefix("error: ") }, "warnings or errors:\n\(log)")
        #expect(lines.contains { $0.hasPrefix("connected to JBL Flip 5") }, "\(log)")
    }
}
