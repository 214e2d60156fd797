import AsyncSignals
import Foundation
@testable import Playback
import TestSupport
import Testing

/// The PulseAudio output against a real server: each test starts its own `pulseaudio` with a null
/// sink and records that sink's monitor with `parec`, so what a listener would hear is analysed.
@Suite("PulseAudio output")
struct PulseAudioOutputTests {
    @Test("a sustained A4 played to PulseAudio reaches the server's sink as a 440 Hz tone", .timeLimit(.minutes(1)))
    func playsA4ThroughTheServer() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        let recorded = directory.appendingPathComponent("monitor.raw").path
        let recording = try await server.record(to: recorded)

        let engine = PlaybackSession(output: DeviceOutput(.pulseAudio(server: server.address)),
                                    soundFont: try await Fixtures.soundFont())
        let a4 = Fixtures.song(program: Fixtures.recorder, notes: [(69, 0, 1.2)], duration: 1.2)
        try await engine.start(a4, title: "A4 to PulseAudio")
        #expect(await engine.waitUntilEnded() == .finished)
        let mono = try await recording.finish()

        let tone = WAVAnalysis.a4Windows(mono)
        #expect(tone.loud > 0, "the sink's monitor heard nothing")
        #expect(tone.clean > 0, "no stretch of what the sink heard is a clean A4 (\(tone.loud) loud windows)")
    }

    @Test("a speaker's song whose sink is gone is refused, never opened on the server's default sink (the box's own output)",
          .timeLimit(.minutes(1)))
    func goneSpeakerSinkIsRefused() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        let engine = PlaybackSession(output: DeviceOutput(.pulseAudio(server: server.address, sink: .speaker(nil))),
                                    soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(69, 0, 1)], duration: 1.2)

        let error = await #expect(throws: AudioOutputError.self) { try await engine.start(song, title: "Nowhere") }
        let message = error?.description ?? ""
        #expect(message.contains("the speaker's sink is gone"), "\(message)")
        #expect(message.contains("does not play a speaker's song to the default sink"), "\(message)")
        #expect(try await server.sinkInputSinks().isEmpty, "a stream was opened although the speaker's sink is gone")
    }

    @Test("PulseAudio without a running server fails the song at once with one clear line", .timeLimit(.minutes(1)))
    func missingServerFailsClearly() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let address = "unix:\(directory.path)/no-server/native"
        let engine = PlaybackSession(output: DeviceOutput(.pulseAudio(server: address)), soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.2)], duration: 0.3)

        let error = await #expect(throws: AudioOutputError.self) { try await engine.start(song, title: "Nowhere") }
        guard case let .deviceUnavailable(output, _)? = error else {
            Issue.record("expected deviceUnavailable, got \(String(describing: error))")
            return
        }
        #expect(output == "pulseaudio:\(address)")
        let message = error?.description ?? ""
        #expect(message.hasPrefix("audio output pulseaudio:\(address) could not be opened: "))
        #expect(message.contains("PulseAudio"), "the message does not say what is missing: \(message)")
        #expect(!message.contains("\n"))
        #expect(await engine.state == .failed(message))
    }

    /// The driver's thread dies on its own, at a moment no injected clock controls, so this test
    /// runs the watchdog on the real clock with a short stall limit and waits for the failure event;
    /// `DeviceWatchdogTests` checks the stall rule itself on a test clock.
    @Test("a PulseAudio server killed mid-song fails the song with a clear message instead of playing on in silence",
          .timeLimit(.minutes(1)))
    func serverKilledMidSongFails() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        let output = DeviceOutput(.pulseAudio(server: server.address), clock: ContinuousClock(), stallLimit: .milliseconds(500))
        let engine = PlaybackSession(output: output, soundFont: try await Fixtures.soundFont())
        let events = await engine.events()
        let long = Fixtures.song(program: Fixtures.recorder, notes: [(69, 0, 29)], duration: 30)
        try await engine.start(long, title: "Cut short")
        #expect(await engine.state == .playing)

        server.kill()
        let state = await engine.waitUntilEnded()
        guard case let .failed(reason) = state else {
            Issue.record("the song did not fail when its server died: \(state)")
            return
        }
        #expect(reason.hasPrefix("audio output pulseaudio:\(server.address) stopped taking audio mid-song"), "\(reason)")
        #expect(reason.hasSuffix("nothing was asked for in 500 ms, so playback ended"), "\(reason)")
        #expect(!reason.contains("\n"))
        #expect(await engine.positionSeconds < 30)
        var failure: String?
        for await event in events {
            if case let .failed(message) = event { failure = message; break }
        }
        #expect(failure == reason)
    }
}
