import AsyncSignals
import Clocks
import Foundation
@testable import Playback
@testable import Readiness
import SpeakerCore
import TestSupport
import Testing

/// The adapter the daemon plugs into `DaemonDependencies.playback`, wired from a configuration.
@Suite("Daemon playback adapter")
struct CoordinatorDaemonPlaybackTests {
    @Test("with audio_output = file the adapter plays a client's song to the WAV and reports it in status")
    func playsToConfiguredFile() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let wavPath = directory.appendingPathComponent("out.wav").path
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let configuration = DaemonConfiguration(audioOutput: .file(path: wavPath), soundfont: SoundFont.defaultPath)
        let playback = CoordinatorDaemonPlayback(gate: gate, configuration: configuration, audioPath: nil, clock: clock,
                                                 waitingFor: { "connecting" })
        try await playback.preloadSoundfont(SoundFont.defaultPath)
        var states = playback.audioPath(to: nil).makeAsyncIterator()
        #expect(await states.next() == .ready("WAV file \(wavPath)"))

        let (request, opened) = try ClientSongs.request(ClientSongs.threeNotes, named: "tune.mid", in: directory)
        try await playback.play(file: request.file, displayName: "tune.mid", queue: false) { nil }
        #expect(!opened.isStillOpen)
        let playing = await playback.snapshot()
        #expect(playing.state == "playing" && playing.file == "tune.mid" && playing.durationSeconds == 3)
        for _ in 0..<10 { await clock.advance(by: .milliseconds(100)) }
        await playback.stop()
        let stopped = await playback.snapshot()
        #expect(stopped.state == "stopped")
        let wav = try WAVFile(path: wavPath)
        #expect(wav.seconds > 0.2, "recorded \(wav.seconds) s")
    }

    @Test("audio_output = auto without a connected speaker fails the song with a clear sentence")
    func automaticNeedsASpeaker() async throws {
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: TestClock())
        let playback = CoordinatorDaemonPlayback(gate: gate, configuration: DaemonConfiguration(audioOutput: .automatic),
                                                 audioPath: nil, waitingFor: { "connecting" })
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (request, _) = try ClientSongs.request(ClientSongs.threeNotes, named: "tune.mid", in: directory)
        let error = await #expect(throws: PlaybackServiceError.self) {
            try await playback.play(file: request.file, displayName: "tune.mid", queue: false) { nil }
        }
        #expect(error?.description.contains("no speaker is connected for audio_output = auto") == true)
        #expect(await playback.snapshot().state == "idle")
    }
}
