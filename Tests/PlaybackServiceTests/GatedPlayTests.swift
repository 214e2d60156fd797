import Clocks
import Foundation
import MIDI
import PlaybackService
import TestSupport
import Testing
@testable import Readiness

/// `composer-cli play` against a daemon that is not ready yet: the request waits in the
/// readiness gate, starts when the gate rises, or fails with a sentence after the timeout; a
/// broken file never waits at all.
@Suite("Gated play")
struct GatedPlayTests {
    @Test("a play made while the speaker is still connecting waits, then starts when playback is ready, and the WAV holds the song")
    func waitsThenStarts() async throws {
        let harness = try await PlayerHarness(initial: .speakerConnected)
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.sustainedA4(seconds: 2), named: "a4.mid")
        let play = Task { try await harness.player.play(request) }

        #expect(await harness.eventually { await harness.activity() == .waiting })
        let waiting = await harness.player.snapshot()
        #expect(waiting.file == "a4.mid")
        #expect(waiting.durationSeconds == 2)
        await harness.play(for: .seconds(5))
        #expect(await harness.activity() == .waiting, "started before the gate rose")

        harness.gate.raise(to: .playbackReady)
        let started = try await play.value
        #expect(started.activity == .playing)
        #expect(started.file == "a4.mid")

        await harness.play(for: .seconds(4))
        #expect(await harness.eventually { await harness.activity() == .idle }, "the song did not finish")
        let wav = try harness.wav(0)
        #expect(wav.seconds >= 2 && wav.seconds < 3.1, "rendered \(wav.seconds) s")
        let middle = wav.monoFloat[Int(0.5 * 44_100)..<Int(1.5 * 44_100)]
        let at440 = WAVAnalysis.energy(at: 440, in: middle, sampleRate: wav.sampleRate)
        let at660 = WAVAnalysis.energy(at: 660, in: middle, sampleRate: wav.sampleRate)
        #expect(WAVAnalysis.rms(middle) > 0.01)
        #expect(at440 > 100 * at660, "440 Hz \(at440) vs 660 Hz \(at660)")
    }

    @Test("a play fails after the 30 s timeout with a sentence naming what the daemon still waits for")
    func timesOutWithClearMessage() async throws {
        let harness = try await PlayerHarness(initial: .speakerConnected)
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { harness.gate.pendingCount > 0 })

        await harness.clock.advance(by: .seconds(29))
        #expect(await harness.activity() == .waiting, "gave up before the timeout")
        await harness.clock.advance(by: .seconds(1))

        let result = await play.result
        let expected = PlaybackServiceError.notReady(file: "tune.mid", after: .seconds(30), waitingFor: "connecting to JBL Flip 5")
        #expect(throws: expected) { try result.get() }
        #expect(expected.description == "the speaker did not become ready within 30 s: still connecting to JBL Flip 5")
        #expect(await harness.activity() == .idle)
        #expect(harness.gate.pendingCount == 0, "the request left a waiter in the gate")
    }

    @Test("the play timeout comes from the settings")
    func configurableTimeout() async throws {
        let harness = try await PlayerHarness(initial: .bus, settings: PlaybackServiceSettings(playTimeout: .seconds(5)))
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { harness.gate.pendingCount > 0 })
        await harness.clock.advance(by: .seconds(5))
        let error = await #expect(throws: PlaybackServiceError.self) { try await play.value }
        #expect(error?.description == "the speaker did not become ready within 5 s: still connecting to JBL Flip 5")
    }

    @Test("a broken MIDI file fails at once with the reader's one-line error, even while the speaker is not ready")
    func badMIDIFailsAtOnce() async throws {
        let harness = try await PlayerHarness(initial: .adapter)
        defer { harness.cleanUp() }
        let broken = Array(ClientSongs.threeNotes.prefix(30))
        let readerError = #expect(throws: MIDIFileError.self) { try MIDIFileReader.read(broken) }
        let (request, opened) = try harness.request(broken, named: "broken.mid")

        // No clock advance and no gate change: the answer must come without waiting.
        let error = await #expect(throws: PlaybackServiceError.self) { try await harness.player.play(request) }
        let reason = try #require(readerError?.description)
        #expect(error == .invalidSong(file: "broken.mid", reason: reason))
        #expect(error?.description == "cannot play broken.mid: \(reason)")
        #expect(error?.description.contains("\n") == false)
        #expect(await harness.activity() == .idle)
        #expect(harness.gate.pendingCount == 0)
        #expect(!opened.isStillOpen, "the client's descriptor was left open")
    }

    @Test("the client's descriptor is closed once the song is read, before the song waits or plays")
    func descriptorClosedAfterReading() async throws {
        let harness = try await PlayerHarness(initial: .speakerConnected)
        defer { harness.cleanUp() }
        let (request, opened) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        #expect(opened.isStillOpen)
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { await harness.activity() == .waiting })
        #expect(!opened.isStillOpen, "the descriptor is still open while the song waits")
        await harness.player.stop()
        let result = await play.result
        #expect(throws: PlaybackServiceError.stoppedBeforeStart(file: "tune.mid")) { try result.get() }
    }

    @Test("a client that gives up while its song waits leaves nothing behind in the gate")
    func cancelledWhileWaiting() async throws {
        let harness = try await PlayerHarness(initial: .adapter)
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { harness.gate.pendingCount > 0 })
        play.cancel()
        let result = await play.result
        #expect(throws: PlaybackServiceError.cancelled(file: "tune.mid")) { try result.get() }
        #expect(harness.gate.pendingCount == 0)
        #expect(await harness.activity() == .idle)
    }
}
