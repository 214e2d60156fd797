import Clocks
import Foundation
import PlaybackService
import TestSupport
import Testing
@testable import Readiness

/// The speaker dropping in the middle of a song (the gate falls below `.playbackReady`) and
/// coming back, under both `on_speaker_lost` policies.
@Suite("Speaker loss")
struct SpeakerLossTests {
    @Test("the speaker dropping pauses the song; its return resumes it where it was, with no audio lost")
    func dropPausesAndRiseResumes() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.threeNotes, named: "tune.mid")
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= 0.95 })

        harness.gate.drop(to: .adapter)
        #expect(await harness.eventually { await harness.activity() == .paused })
        let paused = await harness.player.snapshot()
        #expect(paused.pauseReason == .speakerLost)
        let pausedAt = try #require(paused.positionSeconds)
        #expect(pausedAt >= 0.95 && pausedAt < 1.3, "paused at \(pausedAt)")
        await harness.play(for: .seconds(4))
        #expect(await harness.position() == pausedAt, "position moved while the speaker was away")

        harness.gate.raise(to: .speakerConnected)
        for _ in 0..<100 { await Task.yield() }
        #expect(await harness.activity() == .paused, "resumed before playback was ready")
        harness.gate.raise(to: .playbackReady)
        #expect(await harness.eventually { await harness.activity() == .playing })
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= pausedAt + 0.95 })

        await harness.play(for: .seconds(4))
        #expect(await harness.eventually { await harness.activity() == .idle }, "the song did not finish")
        // The WAV holds the whole song: the notes at 0.5, 1.5 and 2.5 s are all there, on time,
        // with no gap where the speaker was away.
        let wav = try harness.wav(0)
        #expect(wav.seconds >= 3 && wav.seconds < 4.1, "rendered \(wav.seconds) s")
        let onsets = WAVAnalysis.onsets(wav.monoFloat, sampleRate: wav.sampleRate)
        #expect(onsets.count == 3, "onsets: \(onsets)")
        if onsets.count == 3 {
            for (onset, expected) in zip(onsets, [0.5, 1.5, 2.5]) {
                #expect(abs(onset - expected) < 0.03, "onset at \(onset) s, expected \(expected) s")
            }
        }
    }

    @Test("changes report the pause for the speaker and the resume, in order")
    func changesReportSpeakerLoss() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 5), named: "a4.mid")
        let changes = await harness.player.changes()
        harness.gate.drop(to: .adapter)
        #expect(await harness.eventually { await harness.activity() == .paused })
        harness.gate.raise(to: .playbackReady)
        #expect(await harness.eventually { await harness.activity() == .playing })

        // One snapshot per change (progress only moves the position).
        var seen: [PlaybackSnapshot] = []
        for await change in changes {
            if let last = seen.last, change.isSameMoment(as: last) { continue }
            seen.append(change)
            if seen.count == 3 { break }
        }
        #expect(seen.map(\.activity) == [.playing, .paused, .playing])
        #expect(seen.map(\.pauseReason) == [nil, .speakerLost, nil])
        #expect(seen.map(\.file) == ["a4.mid", "a4.mid", "a4.mid"])
        await harness.player.stop()
    }

    @Test("a user's pause is kept when the speaker drops and comes back")
    func userPauseSurvivesReconnect() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 5), named: "a4.mid")
        try await harness.player.pause()
        harness.gate.drop(to: .adapter)
        for _ in 0..<200 { await Task.yield() }
        harness.gate.raise(to: .playbackReady)
        for _ in 0..<200 { await Task.yield() }
        let status = await harness.player.snapshot()
        #expect(status.activity == .paused && status.pauseReason == .user)
        await harness.player.stop()
    }

    @Test("resume while the speaker is away marks the song to resume when it is back")
    func resumeWhileSpeakerAway() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 5), named: "a4.mid")
        try await harness.player.pause()
        harness.gate.drop(to: .adapter)
        let status = try await harness.player.resume()
        #expect(status.activity == .paused && status.pauseReason == .speakerLost)
        harness.gate.raise(to: .playbackReady)
        #expect(await harness.eventually { await harness.activity() == .playing })
        await harness.player.stop()
    }

    @Test("with on_speaker_lost = stop the song stops where it was and does not come back with the speaker")
    func stopPolicy() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady, settings: PlaybackServiceSettings(onSpeakerLost: .stop))
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 5), named: "a4.mid")
        let (queued, _) = try harness.request(ClientSongs.threeNotes, named: "next.mid", queue: true)
        _ = try await harness.player.play(queued)
        await harness.play(for: .seconds(1))
        #expect(await harness.eventually { await harness.position() >= 0.95 })

        harness.gate.drop(to: .adapter)
        #expect(await harness.eventually { await harness.activity() == .stopped })
        let stopped = await harness.player.snapshot()
        #expect(stopped.file == "a4.mid")
        #expect((stopped.positionSeconds ?? 0) >= 0.95)
        #expect(stopped.queued.isEmpty)
        let wav = try harness.wav(0)
        #expect(wav.seconds > 0.9 && wav.seconds < 1.3, "recorded \(wav.seconds) s")

        harness.gate.raise(to: .playbackReady)
        await harness.play(for: .seconds(2))
        #expect(await harness.activity() == .stopped)
    }

    @Test("a song waiting for the speaker is unaffected by drops; it starts on the rise")
    func waitingSongIgnoresDrops() async throws {
        let harness = try await PlayerHarness(initial: .speakerConnected)
        defer { harness.cleanUp() }
        let (request, _) = try harness.request(ClientSongs.threeNotes, named: "tune.mid")
        let play = Task { try await harness.player.play(request) }
        #expect(await harness.eventually { harness.gate.pendingCount > 0 })
        harness.gate.drop(to: .adapter)
        harness.gate.raise(to: .speakerConnected)
        #expect(await harness.activity() == .waiting)
        harness.gate.raise(to: .playbackReady)
        let status = try await play.value
        #expect(status.activity == .playing)
        await harness.player.stop()
    }
}
