import AudioPath
@testable import BlueZ
import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// The speaker's volume on a real sound server, PulseAudio or PipeWire (through pipewire-pulse):
/// speakerd sets it on the speaker's own sink (found by its Bluetooth properties) through
/// libpulse, and `pactl` on the same server sees it.
@Suite("speakerd sets the volume of the speaker's sink on PulseAudio and PipeWire", .serialized)
struct PulseAudioVolumeTests {
    static let speaker = PulseAudioDaemonTests.speaker

    @Test("a new speaker's sink is set to first_volume (not left at 100 %); 'volume 65' sets the sink (pactl agrees) and is remembered; after a restart the returning sink gets 65 % back",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func volumeRoundTripAndRestore(on kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var sink: BluetoothSink?
        // First run: speakerd knows no speaker until it is told to connect one (after a short scan).
        try await PulseAudioDaemonTests.withDaemon(
            pulseServer: server.address, in: directory, state: #"{"version":1,"speakers":[]}"#, config: "first_volume = 30\nscan_seconds = 1\n",
            until: { $0.waitingFor?.code == NotReadyReason.Code.waitingForPick.rawValue }
        ) { client in
            _ = try await client.connect(try BluetoothAddress(Self.speaker))
            let added = try await server.addBluetoothSink(address: Self.speaker)
            sink = added
            try await PulseAudioDaemonTests.eventually("status shows first_volume") { try await client.status().volume == 30 }
            #expect(try await server.volume(of: added) == 30, "the sink is not at first_volume")
            let set = try await client.setVolume(.to(65))
            #expect(set == VolumeReport(percent: 65, address: Self.speaker, name: "JBL Flip 5", device: "PulseAudio sink \(added.name)"))
            #expect(try await server.volume(of: added) == 65)

            // Another client (pavucontrol, the speaker's buttons) moves it: speakerd reads the sink's own level.
            try await server.setVolume(of: added, to: 50)
            #expect(try await client.volume().percent == 50)
            #expect(try await client.setVolume(.by(15)).percent == 65)
            #expect(try await server.volume(of: added) == 65)
            #expect(try await client.status().volume == 65)
        }
        let state = try String(contentsOf: directory.appendingPathComponent("state.json"), encoding: .utf8)
        #expect(state.contains("\"volume\" : 65"), "\(state)")

        // The speaker goes away and speakerd restarts; the speaker's sink comes back new, at 100 %,
        // before speakerd is up again. (WirePlumber would restore a sink of the same name to its
        // last volume by itself; a speaker that reset itself comes back loud, which is the case
        // that matters, so the test sets it so.)
        try await server.remove(try #require(sink))
        let back = try await server.addBluetoothSink(address: Self.speaker)
        try await server.setVolume(of: back, to: 100)
        #expect(try await server.volume(of: back) == 100)
        try await PulseAudioDaemonTests.withDaemon(
            pulseServer: server.address, in: directory, state: nil, until: { $0.volume == 65 }
        ) { client in
            let percent = try await server.volume(of: back)
            #expect(percent == 65)
            let reported = try await client.volume()
            #expect(reported.percent == 65)
        }
    }

    @Test("before the speaker's sink exists, 'volume' says the speaker has no audio device yet and touches no sink",
          .timeLimit(.minutes(2)))
    func noSinkNoVolume() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        try await PulseAudioDaemonTests.withDaemon(
            pulseServer: server.address, in: directory,
            until: { $0.speaker?.connected == true && $0.waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue }
        ) { client in
            let error = await #expect(throws: SpeakerdError.self) { try await client.setVolume(.to(90)) }
            #expect(error?.description == SpeakerVolumeError.noAudioDevice(speaker: "JBL Flip 5").description)
            let builtIn = try await server.pactl(["get-sink-volume", "out"])
            #expect(builtIn.contains("100%"), "the box's own output was changed: \(builtIn)")
        }
    }
}
