import Clocks
import Foundation
import PlaybackService
@testable import SpeakerdAPI
import TestSupport
import Testing
@testable import Readiness

/// What a user does with a song once the speaker is ready: replace it, queue another, pause,
/// resume, stop, ask for the status.
@Suite("Playback control")
struct PlaybackControlTests {
    @Test("a new play replaces the current song: the old one is reported stopped and the new one plays from 0")
    func playReplacesCurrentSong() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        let changes = await harness.player.changes()
        let (first, _) = try harness.request(ClientSongs.sustainedA4(seconds: 5), named: "first.mid")
        _ = try await harness.player.play(first)
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= 0.95 })

        let (second, _) = try harness.request(ClientSongs.threeNotes, named: "second.mid")
        let status = try await harness.player.play(second)
        #expect(status.activity == .playing)
        #expect(status.file == "second.mid")
        #expect(status.durationSeconds == 3)
        #expect((status.positionSeconds ?? 1) < 0.1)

        let first0 = try harness.wav(0)
        #expect(first0.seconds > 0.9 && first0.seconds < 1.3, "the replaced song's WAV is \(first0.seconds) s")
        // One snapshot per change (progress only moves the position).
        var seen: [PlaybackSnapshot] = []
        for await change in changes {
            if let last = seen.last, change.isSameMoment(as: last) { continue }
            seen.append(change)
            if change.activity == .playing, change.file == "second.mid" { break }
        }
        #expect(seen.map(\.activity) == [.idle, .playing, .stopped, .playing])
        #expect(seen.map(\.file) == [nil, "first.mid", "first.mid", "second.mid"])
        #expect(seen.map(\.durationSeconds) == [nil, 5, 5, 3])
        await harness.player.stop()
    }

    @Test("a new play replaces a song still waiting for the speaker; the replaced request is told so")
    func playReplacesWaitingSong() async throws {
        let harness = try await PlayerHarness(initial: .speakerConnected)
        defer { harness.cleanUp() }
        let (first, _) = try harness.request(ClientSongs.threeNotes, named: "first.mid")
        let firstPlay = Task { try await harness.player.play(first) }
        #expect(await harness.eventually { harness.gate.pendingCount > 0 })
        let (second, _) = try harness.request(ClientSongs.threeNotes, named: "second.mid")
        let secondPlay = Task { try await harness.player.play(second) }

        let firstResult = await firstPlay.result
        #expect(throws: PlaybackServiceError.replaced(file: "first.mid", by: "second.mid")) { try firstResult.get() }
        #expect(await harness.eventually { await harness.player.snapshot().file == "second.mid" })
        harness.gate.raise(to: .playbackReady)
        let status = try await secondPlay.value
        #expect(status.activity == .playing && status.file == "second.mid")
        await harness.player.stop()
    }

    @Test("--queue appends: the queued song starts when the current one ends, and both WAVs hold audio")
    func queuedSongFollows() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        let (first, _) = try harness.request(ClientSongs.sustainedA4(seconds: 1), named: "first.mid")
        _ = try await harness.player.play(first)
        let (second, _) = try harness.request(ClientSongs.threeNotes, named: "second.mid", queue: true)
        let queued = try await harness.player.play(second)
        #expect(queued.activity == .playing)
        #expect(queued.file == "first.mid")
        #expect(queued.queued.map(\.file) == ["second.mid"])

        await harness.play(for: .seconds(3))
        #expect(await harness.eventually { await harness.player.snapshot().file == "second.mid" })
        let status = await harness.player.snapshot()
        #expect(status.activity == .playing || status.activity == .waiting)
        #expect(status.queued.isEmpty)
        await harness.play(for: .seconds(5))
        #expect(await harness.eventually { await harness.activity() == .idle }, "the queued song did not finish")

        let firstWAV = try harness.wav(0)
        let secondWAV = try harness.wav(1)
        #expect(WAVAnalysis.rms(firstWAV.monoFloat[...]) > 0.01)
        let onsets = WAVAnalysis.onsets(secondWAV.monoFloat, sampleRate: secondWAV.sampleRate)
        #expect(onsets.count == 3, "onsets: \(onsets)")
    }

    @Test("--queue with nothing playing plays at once")
    func queueWhenIdlePlays() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "only.mid", queue: true)
        let status = try await harness.player.play(request)
        #expect(status.activity == .playing && status.file == "only.mid" && status.queued.isEmpty)
        await harness.player.stop()
    }

    @Test("pause holds the position, resume continues from it, stop ends the song and empties the queue")
    func pauseResumeStop() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        let (next, _) = try harness.request(ClientSongs.threeNotes, named: "next.mid", queue: true)
        _ = try await harness.player.play(next)
        await harness.play(for: .seconds(2))
        #expect(await harness.eventually { await harness.position() >= 1.95 })

        let paused = try await harness.player.pause()
        #expect(paused.activity == .paused && paused.pauseReason == .user)
        let pausedAt = try #require(paused.positionSeconds)
        await harness.play(for: .seconds(3))
        #expect(await harness.position() == pausedAt, "position moved while paused")

        let resumed = try await harness.player.resume()
        #expect(resumed.activity == .playing)
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= pausedAt + 0.95 })

        let stopped = await harness.player.stop()
        #expect(stopped.activity == .stopped)
        #expect(stopped.file == "long.mid")
        #expect(stopped.durationSeconds == 10)
        #expect((stopped.positionSeconds ?? 0) >= pausedAt + 0.95)
        #expect(stopped.queued.isEmpty)
        #expect(StatusReport.Playback(stopped) == StatusReport.Playback(state: "stopped", file: "long.mid",
                                                        positionSeconds: stopped.positionSeconds, durationSeconds: 10))
        let wav = try harness.wav(0)
        #expect(abs(wav.seconds - (stopped.positionSeconds ?? 0)) < 0.1, "WAV \(wav.seconds) s, stopped at \(stopped.positionSeconds ?? 0)")
        await harness.play(for: .seconds(5))
        #expect(await harness.activity() == .stopped, "the queue played on after stop")
    }

    @Test("pause and resume with nothing playing, or before the song started, fail with a clear sentence")
    func refusals() async throws {
        let harness = try await PlayerHarness(initial: .adapter)
        defer { harness.cleanUp() }
        #expect(await harness.player.snapshot() == .idle)
        #expect(StatusReport.Playback(PlaybackSnapshot.idle) == .idle)
        await #expect(throws: PlaybackServiceError.nothingPlaying(operation: "pause")) { try await harness.player.pause() }
        await #expect(throws: PlaybackServiceError.nothingPlaying(operation: "resume")) { try await harness.player.resume() }
        #expect(PlaybackServiceError.nothingPlaying(operation: "pause").description == "cannot pause: nothing is playing")

        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { await harness.activity() == .waiting })
        let error = await #expect(throws: PlaybackServiceError.self) { try await harness.player.pause() }
        #expect(error?.description == "cannot pause: tune.mid has not started yet (it waits for the speaker)")
        let waiting = await harness.player.snapshot()
        #expect(StatusReport.Playback(waiting) == StatusReport.Playback(state: "waiting", file: "tune.mid", positionSeconds: 0, durationSeconds: 3))
        await harness.player.stop()
        _ = await play.result
        #expect(await harness.activity() == .idle)
    }

    @Test("after shutdown the song is stopped, its WAV complete, and new requests are refused")
    func shutdownStopsPlayback() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.threeNotes, named: "tune.mid")
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= 0.95 })
        await harness.player.shutdown()
        let wav = try harness.wav(0)
        #expect(wav.seconds > 0.9)
        let (later, _) = try harness.request(ClientSongs.threeNotes, named: "later.mid")
        await #expect(throws: PlaybackServiceError.shuttingDown) { try await harness.player.play(later) }
    }
}
