import AsyncSignals
import Clocks
import Foundation
import MIDI
@testable import Playback
import TestSupport
import Testing

/// The pre-roll (`pre_roll_ms`), judged in the written audio: a new stream starts with exactly
/// that much digital silence, then exactly the song; a re-opened stream gets it again, a plain
/// resume on the same stream does not.
@Suite("Pre-roll before the first note")
struct PreRollTests {
    /// A note from the very first frame, so any silence before it is the pre-roll's.
    private let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.8)], duration: 1)
    private static let preRoll: Duration = .milliseconds(150)

    private func render(_ song: MIDISong, preRoll: Duration, to path: String) async throws -> WAVFile {
        let engine = PlaybackSession(output: WAVFileOutput(path: path, pacing: .offline), preRoll: preRoll,
                                    soundFont: { try await Fixtures.soundFont() })
        try await engine.start(song, title: "Pre-roll")
        #expect(await engine.waitUntilEnded() == .finished)
        return try WAVFile(path: path)
    }

    @Test("a song's stream starts with exactly the pre-roll of silence, then the song sample for sample")
    func silenceThenTheSong() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = try await render(song, preRoll: .zero, to: directory.appendingPathComponent("plain.wav").path)
        let rolled = try await render(song, preRoll: Self.preRoll, to: directory.appendingPathComponent("rolled.wav").path)

        let preRollFrames = rolled.sampleRate * 150 / 1000
        #expect(rolled.frameCount == plain.frameCount + preRollFrames)
        #expect(rolled.samples.prefix(preRollFrames * 2).allSatisfy { $0 == 0 }, "the pre-roll is digital silence")
        #expect(Array(rolled.samples.dropFirst(preRollFrames * 2)) == plain.samples, "after it comes exactly the song")

        // What a listener measures: the first sound 150 ms after the stream opened (the piano's
        // attack reaches -60 dBFS within a millisecond).
        let plainFirst = try #require(WAVAnalysis.firstSound(plain.monoFloat, sampleRate: plain.sampleRate))
        let first = try #require(WAVAnalysis.firstSound(rolled.monoFloat, sampleRate: rolled.sampleRate))
        #expect(plainFirst < 0.01)
        #expect(abs(first - plainFirst - 0.150) < 1.0 / Double(rolled.sampleRate))
    }

    @Test("pre_roll_ms = 0 leaves the song as it was")
    func zeroDisables() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = try await render(song, preRoll: .zero, to: directory.appendingPathComponent("plain.wav").path)
        #expect(try #require(WAVAnalysis.firstSound(plain.monoFloat, sampleRate: plain.sampleRate)) < 0.01)
    }

    @Test("a new output taking a paused song over starts with the pre-roll again; the song goes on after it")
    func reopenedStreamGetsThePreRollAgain() async throws {
        let wav = try await heldNoteResumed(onNewStream: true)
        let preRollFrames = wav.sampleRate * 150 / 1000
        #expect(wav.samples.prefix(preRollFrames * 2).allSatisfy { $0 == 0 })
        let after = wav.monoFloat[preRollFrames..<(preRollFrames + wav.sampleRate / 100)]
        #expect(WAVAnalysis.peak(after) > 0.01, "the held note goes on right after the pre-roll")
    }

    @Test("pause and resume on the same stream add no silence: the stream stayed open")
    func plainResumeHasNoPreRoll() async throws {
        let wav = try await heldNoteResumed(onNewStream: false)
        let preRollFrames = wav.sampleRate * 150 / 1000
        #expect(wav.frameCount >= preRollFrames + 3 * wav.sampleRate)
        // From the end of the pre-roll to the note's release, every 10 ms window sounds.
        let note = Array(wav.monoFloat[(preRollFrames + wav.sampleRate / 100)..<(preRollFrames + wav.sampleRate * 28 / 10)])
        let quiet = WAVAnalysis.rmsPerWindow(note, sampleRate: wav.sampleRate, windowSeconds: 0.01).filter { $0 < 0.001 }
        #expect(quiet.isEmpty, "a gap of silence inside the held note")
    }

    @Test("the keep-alive signal is inaudible but not digital silence: -60 dBFS bursts of a 30 Hz tone")
    func keepAliveSignalLevel() {
        let source = PlaybackSource(keepAliveAt: 44_100)
        var buffer = [Int16](repeating: 0, count: 44_100 * 2 * 5)
        let frames = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
        #expect(frames == 44_100 * 5)
        let left = stride(from: 0, to: buffer.count, by: 2).map { Float(buffer[$0]) / Float(Int16.max) }
        let burst = left[0..<44_100]
        let rest = left[44_100...]
        let peak = WAVAnalysis.peak(burst)
        #expect(peak > 0.0008 && peak <= 0.0011, "peak \(peak), expected about -60 dBFS")
        #expect(rest.allSatisfy { $0 == 0 }, "between bursts")
        #expect(WAVAnalysis.energy(at: 30, in: burst, sampleRate: 44_100) > 10 * WAVAnalysis.energy(at: 200, in: burst, sampleRate: 44_100))
        #expect(!source.hasEnded)
        source.stop()
        #expect(buffer.withUnsafeMutableBufferPointer { source.render(into: $0) } == 0)
    }

    /// Plays 1 s of a 3 s held note, pauses for 1 s, has a new output take the song over when
    /// `onNewStream`, then resumes to the end; returns the WAV of the output that played the
    /// resume. Recorder: a steady tone, so the held note sounds at once after any silence.
    private func heldNoteResumed(onNewStream: Bool) async throws -> WAVFile {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("first.wav").path
        let second = directory.appendingPathComponent("second.wav").path
        let held = Fixtures.song(program: Fixtures.recorder, notes: [(72, 0, 2.9)], duration: 3)
        let engine = PlaybackSession(output: WAVFileOutput(path: first, pacing: .realTime(clock)), clock: clock,
                                    preRoll: Self.preRoll, soundFont: { try await Fixtures.soundFont() })
        try await engine.start(held, title: "Held")
        await advance(clock, by: .seconds(1))
        try await engine.pause()
        await advance(clock, by: .seconds(1))
        if onNewStream {
            try await engine.replaceOutput(with: WAVFileOutput(path: second, pacing: .realTime(clock)))
        }
        try await engine.resume()
        await advance(clock, by: .seconds(4))
        #expect(await engine.waitUntilEnded() == .finished)
        return try WAVFile(path: onNewStream ? second : first)
    }

    /// Advances the test clock in 100 ms steps, letting the paced output keep up.
    private func advance(_ clock: TestClock<Duration>, by duration: Duration) async {
        var left = duration
        while left > .zero {
            for _ in 0..<200 { await Task.yield() }
            let step = min(left, .milliseconds(100))
            await clock.advance(by: step)
            left -= step
        }
        for _ in 0..<200 { await Task.yield() }
    }
}
