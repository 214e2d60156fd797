import Foundation
import SpeakerdAPI
import TestSupport
import Testing

/// An adapter plugged in while speakerd runs, whose paired speaker bluetoothd lists a moment after
/// the adapter itself (as it does: the adapter first, then the devices it remembers). Start-up's
/// run for the new adapter asks for the known speaker at once; it must wait for the listing and
/// connect it, not take "unknown device" for "no known speaker answered" and scan.
@Suite("A known speaker listed after its adapter: speakerd and composer-cli", .serialized)
struct SpeakerListedLateEndToEndTests {
    @Test("the adapter is plugged in, its known speaker listed a second later: start-up connects it with one Connect, scans not at all, and the scale plays into it")
    func connectsTheSpeakerListedAfterItsAdapter() async throws {
        let fake = try await DaemonWorld.start(.speakerd)  // bluetoothd with no adapter yet
        fake.remember([DaemonWorld.flip])
        let wav = fake.state.path + "/song.wav"
        let readiness = TruthfulReadinessEndToEndTests()
        try await readiness.withSpeakerd(fake, output: wav) { address, client in
            try await eventually("the boot's start-up stopped for want of an adapter") {
                try await client.status().message == "Waiting for a Bluetooth adapter to be plugged in"
            }
            try await fake.addAdapter()
            // A second passes before bluetoothd lists the speaker it remembers on that adapter.
            try await Task.sleep(for: .seconds(1))
            try await fake.addSpeaker()
            try await eventually("the second start-up has ended", within: .seconds(30)) { (try? await client.startup())?.run == 2 }

            let run = try await ExecutableRun.run("composer-cli", ["startup", "--json", "--bus", address])
            #expect(run.status == 0, "\(run.standardError)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
            let operations = try #require(object["operations"] as? [[String: Any]], "\(run.standardOutput)")
            let connect = try #require(operations.first { $0["name"] as? String == "connectKnownSpeaker" }, "\(operations)")
            #expect(connect["outcome"] as? String == "ok", "start-up's run connected the known speaker: \(connect)")
            #expect(try await client.status().speaker?.connected == true)
            #expect(try await fake.calls("Connect") == 1, "one Connect, sent once the speaker was listed")
            let discoveries = try await fake.mock("GetMethodCalls", .string("StartDiscovery"), path: "/org/bluez/hci0",
                                                  interface: "org.freedesktop.DBus.Mock")
            if case .array(_, let calls)? = discoveries.first?.unwrappingVariants {
                #expect(calls.isEmpty, "no scan: the known speaker answered (\(calls.count) StartDiscovery)")
            } else {
                Issue.record("dbusmock's call log of the adapter: \(discoveries)")
            }

            try await readiness.playScale(address, client, into: wav)
        }
    }
}
