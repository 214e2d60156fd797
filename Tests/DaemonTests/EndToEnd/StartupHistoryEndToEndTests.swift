import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// Issue 24 item 4, "`startup` keeps the boot's timeline and shows later runs beside it", through
/// the real `speakerd` and `composer-cli` on a private bus with the fake BlueZ: the boot's start-up
/// stops for want of an adapter, the adapter is plugged in later, start-up runs again, and
/// `composer-cli startup` (piped, `--json`, on a terminal) shows the boot's run as it was and the
/// later one beside it.
@Suite("startup keeps the boot's run beside later ones: speakerd and composer-cli", .serialized)
struct StartupHistoryEndToEndTests {
    static let flip = DaemonWorld.flip

    @Test("no adapter at boot, plugged in later: startup shows the boot's run unchanged under its heading and the second run beside it, piped, in --json and on a terminal")
    func bootRunKeptBesideTheLaterRun() async throws {
        let fake = try await DaemonWorld.start(.speakerd)  // bluetoothd with no adapter yet
        fake.remember([Self.flip])
        try await TruthfulReadinessEndToEndTests().withSpeakerd(fake, output: fake.state.path + "/song.wav") { address, client in
            try await eventually("the boot's start-up stopped for want of an adapter") {
                try await client.status().message == "Waiting for a Bluetooth adapter to be plugged in"
            }
            try await eventually("the boot's run is recorded") { (try? await client.startup())?.run == 1 }

            // At boot: one table, no heading.
            let atBoot = try await ExecutableRun.run("composer-cli", ["startup", "--bus", address])
            #expect(atBoot.status == 0 && atBoot.standardError.isEmpty, "\(atBoot.standardError)")
            let bootTable = atBoot.standardOutput.hasSuffix("\n") ? String(atBoot.standardOutput.dropLast()) : atBoot.standardOutput
            #expect(bootTable.hasPrefix("Start-up (regular), "), "\(bootTable)")
            #expect(!bootTable.contains("Start-up at boot") && !bootTable.contains("Start-up run"), "\(bootTable)")
            let adapterRow = try #require(bootTable.split(separator: "\n").first { $0.hasPrefix("adapter ") }, "\(bootTable)")
            #expect(!adapterRow.hasSuffix("  ok"), "the boot's adapter step did not succeed: \(adapterRow)")

            // A moment later the adapter is plugged in; bluetoothd lists the paired speaker on it.
            try await Task.sleep(for: .seconds(1))
            try await fake.addAdapter()
            try await fake.addSpeaker()
            try await eventually("the second start-up has ended", within: .seconds(30)) { (try? await client.startup())?.run == 2 }
            try await eventually("the speaker is connected") { try await client.status().speaker?.connected == true }

            // Piped: the boot's table as it was, under its heading, then the second run's under its own.
            let later = try await ExecutableRun.run("composer-cli", ["startup", "--bus", address])
            #expect(later.status == 0 && later.standardError.isEmpty, "\(later.standardError)")
            let text = later.standardOutput
            #expect(text.hasPrefix("Start-up at boot:\n" + bootTable + "\n\nStart-up run 2, "),
                    "the boot's run comes first, unchanged:\n\(text)\n--- at boot it was:\n\(bootTable)")
            let heading = try #require(text.split(separator: "\n").first { $0.hasPrefix("Start-up run 2, ") }, "\(text)")
            #expect(heading.range(of: #"^Start-up run 2, \d+ s after speakerd started \(adapter hci0 appeared\):$"#,
                                  options: .regularExpression) != nil, "\(heading)")
            let second = try #require(text.components(separatedBy: heading + "\n").last)
            #expect(second.hasPrefix("Start-up (regular), "), "the second run's table follows its heading:\n\(text)")
            let secondAdapter = try #require(second.split(separator: "\n").first { $0.hasPrefix("adapter ") }, "\(second)")
            #expect(secondAdapter.hasSuffix("  ok"), "\(secondAdapter)")
            #expect(second.split(separator: "\n").contains { $0.hasPrefix("connectKnownSpeaker ") && $0.hasSuffix("  ok") },
                    "the second run connected the speaker:\n\(second)")

            // --json: both runs, with stable keys.
            let json = try await ExecutableRun.run("composer-cli", ["startup", "--json", "--bus", address])
            #expect(json.status == 0, "\(json.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["scenario", "operations", "criticalPath", "run", "startedAfterMs", "reason", "bootRun"],
                    "\(object.keys.sorted())")
            #expect(object["run"] as? Int == 2)
            #expect(object["reason"] as? String == "adapter hci0 appeared")
            let startedAfter = try #require(object["startedAfterMs"] as? Double)
            #expect(startedAfter >= 1_000, "the second run began after the adapter came, \(startedAfter) ms in")
            let boot = try #require(object["bootRun"] as? [String: Any], "no bootRun: \(json.standardOutput)")
            #expect(Set(boot.keys) == ["scenario", "operations", "criticalPath", "run", "startedAfterMs"], "\(boot.keys.sorted())")
            #expect(boot["run"] as? Int == 1 && boot["startedAfterMs"] as? Double == 0)
            for run in [object, boot] {
                let operations = try #require(run["operations"] as? [[String: Any]])
                #expect(!operations.isEmpty)
                for operation in operations {
                    #expect(Set(["name", "startMs", "endMs", "outcome"]).isSubset(of: operation.keys), "\(operation)")
                    #expect(Set(operation.keys).isSubset(of: ["name", "startMs", "endMs", "outcome", "reason"]), "\(operation)")
                }
            }
            let bootAdapter = try #require((boot["operations"] as? [[String: Any]])?.first { $0["name"] as? String == "adapter" })
            #expect(bootAdapter["outcome"] as? String == "failed", "the boot's own adapter row, not the later one: \(bootAdapter)")
            let laterAdapter = try #require((object["operations"] as? [[String: Any]])?.first { $0["name"] as? String == "adapter" })
            #expect(laterAdapter["outcome"] as? String == "ok", "\(laterAdapter)")

            // On a terminal: a chart for each run, each under its heading, the boot's first.
            let (screen, exit) = try await PersonSessionTests().onTerminal(["startup", "--bus", address],
                                                                          steps: #"[{"expect": "Start-up run 2, "}]"#)
            #expect(exit == 0, "\(screen)")
            let bootHeading = try #require(screen.range(of: "Start-up at boot:\nStart-up (regular), "), "\(screen)")
            let laterHeading = try #require(screen.range(of: heading + "\nStart-up (regular), "), "\(screen)")
            #expect(bootHeading.upperBound < laterHeading.lowerBound, "the boot's chart comes first:\n\(screen)")
            #expect(screen.components(separatedBy: "; * = critical path").count == 3, "two charts:\n\(screen)")
        }
    }
}
