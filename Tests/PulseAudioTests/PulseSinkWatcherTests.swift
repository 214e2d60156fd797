import Foundation
@testable import PulseAudio
import TestSupport
import Testing

/// Finding the speaker's own sink on a sound server: which sinks count (by their properties,
/// never their name), and libpulse's view of a real server as sinks come and go. The audio
/// path's states that follow from it are AudioPath's (its SoundServerPathTests).
@Suite("The speaker's sink on a PulseAudio server")
struct PulseSinkWatcherTests {
    /// As BlueZ spells it, in another case than the servers: the match ignores case.
    static let speaker = "11:22:33:aa:bb:cc"

    static func sink(_ properties: [String: String], card: String? = nil) -> SoundServerSink {
        SoundServerSink(index: 1, name: "any_name_at_all", properties: properties, cardProfile: card)
    }

    @Test("a PipeWire node for the speaker in A2DP is its sink, whatever the sink is called")
    func pipeWireSinkMatches() {
        let node = Self.sink(["device.bus": "bluetooth", "api.bluez5.address": "11:22:33:AA:BB:CC", "api.bluez5.profile": "a2dp-sink"])
        #expect(node.isA2DPSink(of: Self.speaker))
    }

    @Test("PulseAudio's bluez5 sink for the speaker counts by its card's A2DP profile; in a headset profile it does not")
    func pulseAudioSinkMatchesByCardProfile() {
        let properties = ["device.bus": "bluetooth", "device.string": "11:22:33:aa:bb:cc"]
        #expect(Self.sink(properties, card: "a2dp_sink").isA2DPSink(of: Self.speaker))
        #expect(!Self.sink(properties, card: "headset_head_unit").isA2DPSink(of: Self.speaker))
        #expect(!Self.sink(properties).isA2DPSink(of: Self.speaker), "no profile known: not known to be A2DP")
    }

    /// Found by the real-Bluetooth scenario hfp-beside-a2dp (PipeWire 0.3.65 lists the card's
    /// profiles with `available` 1): the headset card was left in its headset profile.
    @Test("a card profile the server calls available (libpulse's yes/no: non-zero) can be chosen; zero cannot")
    func profileAvailabilityIsAYesOrNo() {
        #expect(SoundServerCard.isChoosable(available: 1), "PipeWire and PulseAudio send 1 for an available profile")
        #expect(!SoundServerCard.isChoosable(available: 0))
    }

    @Test("another speaker's sink, a sink off the Bluetooth bus, and a sink merely named like the speaker are not its sink")
    func otherSinksDoNotMatch() {
        #expect(!Self.sink(["device.bus": "bluetooth", "api.bluez5.address": "11:22:33:AA:BB:CD", "api.bluez5.profile": "a2dp-sink"])
            .isA2DPSink(of: Self.speaker))
        #expect(!Self.sink(["device.bus": "usb", "device.string": "11:22:33:AA:BB:CC", "api.bluez5.profile": "a2dp-sink"])
            .isA2DPSink(of: Self.speaker))
        let named = SoundServerSink(index: 2, name: "bluez_sink.11_22_33_AA_BB_CC.a2dp_sink", properties: ["device.bus": "pci"])
        #expect(!named.isA2DPSink(of: Self.speaker))
    }

    @Test("libpulse sees a real server's Bluetooth sink appear and vanish, with its properties", .timeLimit(.minutes(1)),
          arguments: SoundServerKind.allCases)
    func watcherFollowsARealServer(kind: SoundServerKind) async throws {
        let directory = try TemporaryDirectory.makeURL()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        do {
            var states = PulseSinkWatcher.states(server: server.address).makeAsyncIterator()

            let first = try #require(await Self.next(&states) { _ in true })
            #expect(first.map(\.name) == ["out"], "the server starts with its own output only")
            let clients = try await Self.clients(of: server)
            #expect(clients == ["speakerd"], "the watcher is not the server's one speakerd client: \(clients)")

            let added = try await server.addBluetoothSink(address: "11:22:33:AA:BB:CC")
            let withSpeaker = try #require(await Self.next(&states) { $0.contains { $0.isA2DPSink(of: Self.speaker) } })
            let found = try #require(withSpeaker.first { $0.isA2DPSink(of: Self.speaker) })
            #expect(found.name == added.name)
            #expect(Int(found.index) == added.index)
            #expect(found.properties["device.string"] == "11:22:33:AA:BB:CC")

            try await server.remove(added)
            let after = try #require(await Self.next(&states) { !$0.contains { $0.isA2DPSink(of: Self.speaker) } })
            #expect(after.map(\.name) == ["out"])
        }
        // The stream dropped: its connection (and main loop thread) ends.
        try await eventually("the watcher's connection has closed", within: .seconds(30), every: .milliseconds(50)) {
            try await Self.clients(of: server).isEmpty
        }
    }

    /// The clients of `server` that speakerd opened: those whose `application.name` is the name
    /// its libpulse context gives ("speakerd"). PipeWire also lists its own programs as clients.
    static func clients(of server: PulseAudioServer) async throws -> [String] {
        try await server.pactl(["list", "clients"]).split(separator: "\n").compactMap { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            return text == "application.name = \"speakerd\"" ? "speakerd" : nil
        }
    }

    /// The next sink list for which `condition` holds (skipping others), or nil when the stream
    /// ends or says the server is unreachable.
    static func next(_ states: inout AsyncStream<SoundServerState>.Iterator,
                     where condition: ([SoundServerSink]) -> Bool) async -> [SoundServerSink]? {
        while let state = await states.next() {
            switch state {
            case .unreachable(let problem):
                Issue.record("the server became unreachable: \(problem)")
                return nil
            case .sinks(let sinks, _) where condition(sinks): return sinks
            case .sinks: continue
            }
        }
        return nil
    }
}
