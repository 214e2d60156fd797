import AsyncSignals
import Foundation
import Testing
import TestSupport
import SpeakerdAPI

/// The speaker's sink as a real stack makes it: PipeWire's bluez5 monitor and PulseAudio's
/// module-bluez5-discover create the A2DP sink when the device connects and remove it when it
/// disconnects. Here the harness does the same, following the fake BlueZ device's `Connected`
/// (`BluetoothSinkFollower`), so the speaker going off takes its sink with it, as it would.
@Suite("the speaker's sink comes and goes with its Bluetooth connection, on PulseAudio and on PipeWire", .serialized)
struct SinkFollowsConnectionTests {
    static let speaker = PulseAudioDaemonTests.speaker

    @Test("the speaker switched off mid-song takes its sink along: the song pauses and status waits for the speaker; switched on again, speakerd reconnects it, its sink returns and the song plays on it to its end",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func speakerOffAndOnMidSong(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var fakeBlueZ: FakeBusWorld?
        var recording: Recording?
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory, switchableSpeaker: true,
                                                   world: { fakeBlueZ = $0 }) { client, follower in
            let world = try #require(fakeBlueZ)
            let first = try #require(follower.sink, "speakerd connected the speaker but the harness loaded no sink for it")
            #expect(follower.actions == ["loaded \(first.name)"])
            let started = try await client.play(
                try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 8), named: "a4.mid", in: directory))
            #expect(started.playback.state == "playing")
            #expect(try await server.sinkInputSinks() == [first.index], "the song's stream is not on the speaker's sink")
            try await PulseAudioDaemonTests.untilPlayed(1, by: client)

            #expect(try await world.send("speaker-off \(Self.speaker)") == "ok")
            try await PulseAudioDaemonTests.eventually("the harness unloads the speaker's sink") { follower.sink == nil }
            #expect(try await server.sinks()[first.name] == nil, "the speaker's sink outlived its connection")
            try await PulseAudioDaemonTests.eventually("the song pauses") { try await client.status().playback.state == "paused" }
            let gone = try await client.status()
            #expect(gone.speaker?.connected == false)
            #expect(gone.readiness != "playbackReady", "readiness did not drop with the speaker")
            let waitingFor = try #require(gone.waitingFor, "status does not say what speakerd waits for")
            #expect([NotReadyReason.Code.speakerUnreachable.rawValue, NotReadyReason.Code.connecting.rawValue].contains(waitingFor.code),
                    "status waits for \(waitingFor.code) (\(waitingFor.message)), not for the speaker")
            #expect(gone.message.contains("JBL Flip 5"), "\(gone.message)")
            let pausedAt = try #require(gone.playback.positionSeconds)

            #expect(try await world.send("speaker-on \(Self.speaker)") == "ok")
            try await PulseAudioDaemonTests.eventually("speakerd reconnects the speaker and the harness loads its sink again",
                                                       within: .seconds(40)) { follower.sink != nil }
            let back = try #require(follower.sink)
            recording = try await server.record(to: directory.appendingPathComponent("back.raw").path, from: back.monitor)
            try await PulseAudioDaemonTests.eventually("the song resumes") { try await client.status().playback.state == "playing" }
            let resumed = try await client.status()
            #expect(resumed.speaker?.connected == true)
            #expect(abs((resumed.playback.positionSeconds ?? 0) - pausedAt) < 1, "paused at \(pausedAt) s, resumed at \(String(describing: resumed.playback.positionSeconds)) s")
            #expect(try await server.sinkInputSinks() == [back.index], "the resumed song's stream is not on the speaker's new sink")
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
            let done = try await client.status()
            #expect(done.playback.state == "idle")
            #expect(done.readiness == "playbackReady")
            #expect(follower.actions == ["loaded \(first.name)", "unloaded \(first.name)", "loaded \(back.name)"])
        }
        let tone = WAVAnalysis.a4Windows(try await #require(recording).finish())
        #expect(tone.clean > 0, "after the speaker came back its sink heard no clean A4 (\(tone.loud) loud windows)")
    }
}
