import AudioPath
import AsyncSignals
import Clocks
import Foundation
@testable import Playback
import PlaybackService
@testable import Readiness
import SpeakerdAPI
import Daemon
import TestSupport
import Testing
import Configuration

/// The player the live daemon builds (`Player.live`), wired from a configuration.
@Suite("Live player")
struct LivePlayerTests {
    @Test("with audio_output = file the player plays a client's song to the WAV and reports it in its snapshot")
    func playsToConfiguredFile() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let wavPath = directory.appendingPathComponent("out.wav").path
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let configuration = DaemonConfiguration(audioOutput: .file(path: wavPath), soundfont: SoundFont.defaultPath)
        let audio = configuration.audioOutput.backend(soundServers: configuration.soundServers, clock: clock)
        let player = Player.live(configuration: configuration, gate: gate, audio: audio, clock: clock)
        try await player.preloadSoundfont(SoundFont.defaultPath)
        var states = audio.paths(to: nil, over: nil).makeAsyncIterator()
        let route = try #require(await states.next()?.state.route)
        #expect(route.description == "WAV file \(wavPath)")
        // The daemon hands its player each route the path is ready on.
        await player.routeChanged(to: nil, route: route)

        let (request, opened) = try ClientSongs.request(ClientSongs.threeNotes, named: "tune.mid", in: directory)
        let started = try await player.play(file: request.file, displayName: "tune.mid", queue: false)
        #expect(!opened.isStillOpen)
        #expect(started.activity == .playing && started.file == "tune.mid" && started.durationSeconds == 3)
        let playing = await player.snapshot()
        #expect(playing.activity == .playing && playing.file == "tune.mid" && playing.durationSeconds == 3)
        // The render is paced by the test clock; on a busy machine it runs behind the clock's
        // steps, so time moves until a quarter second has reached the file, not a fixed second.
        _ = try await clock.advance(atMost: .seconds(3), until: "a quarter second of the song is written") {
            await player.snapshot().positionSeconds ?? 0 > 0.25
        }
        let stopped = await player.stop()
        #expect(stopped.activity == .stopped)
        #expect(await player.snapshot().activity == .stopped)
        let wav = try WAVFile(path: wavPath)
        #expect(wav.seconds > 0.2, "recorded \(wav.seconds) s")
    }

    @Test("audio_output = auto without a connected speaker fails the song with a clear sentence")
    func automaticNeedsASpeaker() async throws {
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: TestClock())
        let configuration = DaemonConfiguration(audioOutput: .automatic)
        let player = Player.live(configuration: configuration, gate: gate,
                                 audio: configuration.audioOutput.backend(soundServers: configuration.soundServers))
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (request, _) = try ClientSongs.request(ClientSongs.threeNotes, named: "tune.mid", in: directory)
        let error = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(file: request.file, displayName: "tune.mid", queue: false)
        }
        #expect(error?.description.contains("no speaker is connected for audio_output = auto") == true)
        #expect(await player.snapshot().activity == .idle)
    }

    @Test("a song that would wait fails at once with the daemon's reason when waiting cannot succeed, after the file is read")
    func cannotWaitUsesTheDaemonsReason() async throws {
        let clock = TestClock()
        let gate = ReadinessGate<DaemonReadiness>(initial: .speakerConnected, clock: clock)
        let player = Player.live(configuration: DaemonConfiguration(audioOutput: .null), gate: gate, audio: NullBackend(clock: clock), clock: clock)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        await player.readinessChanged(PlaybackWait(message: "the speaker was disconnected by the user; connect it again",
                                                   waitingCanSucceed: false))

        // A broken file fails first, whatever else is wrong.
        let (broken, _) = try ClientSongs.request([0x4D, 0x54], named: "broken.mid", in: directory)
        let invalid = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(file: broken.file, displayName: "broken.mid", queue: false)
        }
        guard case .invalidSong(file: "broken.mid", _)? = invalid else {
            Issue.record("expected invalidSong, got \(String(describing: invalid))")
            return
        }

        let (request, opened) = try ClientSongs.request(ClientSongs.threeNotes, named: "tune.mid", in: directory)
        await #expect(throws: PlaybackServiceError.cannotWait(file: "tune.mid",
                                                              reason: "the speaker was disconnected by the user; connect it again")) {
            try await player.play(file: request.file, displayName: "tune.mid", queue: false)
        }
        #expect(!opened.isStillOpen)
        #expect(await player.snapshot().activity == .idle)
    }
}
