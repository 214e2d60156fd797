import Foundation
import MIDI
@testable import Playback
import TestSupport
import Testing

/// Songs rendered to WAV and judged by their samples, as a listener would judge them.
@Suite("Rendered audio")
struct RenderedAudioTests {
    private func render(_ song: MIDISong) async throws -> (WAVFile, OfflineRenderer.Summary) {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("out.wav").path
        let summary = try await OfflineRenderer.render(song, soundFont: try await Fixtures.soundFont(), to: path)
        return (try WAVFile(path: path), summary)
    }

    @Test("a sustained A4 has its energy at 440 Hz, not at its octaves or neighbours")
    func sustainedA4IsAt440Hz() async throws {
        let song = Fixtures.song(program: Fixtures.recorder, notes: [(69, 0, 1.5)], duration: 1.5)
        let (wav, _) = try await render(song)
        #expect(wav.sampleRate == 44_100 && wav.channels == 2)
        let mono = wav.monoFloat
        // The steady middle of the note, away from attack and release.
        let middle = mono[Int(0.3 * 44_100)..<Int(1.3 * 44_100)]
        let at440 = WAVAnalysis.energy(at: 440, in: middle, sampleRate: 44_100)
        for other in [220.0, 330, 415.3, 466.2, 554.4, 880] {
            let energy = WAVAnalysis.energy(at: other, in: middle, sampleRate: 44_100)
            #expect(at440 > 1000 * energy, "440 Hz energy \(at440) vs \(other) Hz energy \(energy)")
        }
    }

    @Test("two notes start at 0.5 s and 1.5 s, within 20 ms")
    func twoNotesStartOnTime() async throws {
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0.5, 1.0), (67, 1.5, 2.0)], duration: 2.0)
        let (wav, _) = try await render(song)
        let onsets = WAVAnalysis.onsets(wav.monoFloat, sampleRate: wav.sampleRate)
        #expect(onsets.count == 2, "onsets: \(onsets)")
        guard onsets.count == 2 else { return }
        #expect(abs(onsets[0] - 0.5) < 0.02, "first onset at \(onsets[0]) s")
        #expect(abs(onsets[1] - 1.5) < 0.02, "second onset at \(onsets[1]) s")
    }

    @Test("a song whose first note comes late is silent until that note")
    func silenceBeforeFirstNote() async throws {
        let song = Fixtures.song(program: Fixtures.piano, notes: [(64, 1.25, 1.75)], duration: 2.0)
        let (wav, _) = try await render(song)
        let mono = wav.monoFloat
        let before = mono[0..<Int(1.2 * 44_100)]
        #expect(WAVAnalysis.peak(before) <= 1.0 / 32768, "peak before the note: \(WAVAnalysis.peak(before))")
        let first = try #require(WAVAnalysis.firstSound(mono, sampleRate: wav.sampleRate))
        #expect(abs(first - 1.25) < 0.01, "first sound at \(first) s")
    }

    @Test("rendered length is the song's duration plus a release tail of at most one second")
    func lengthIsDurationPlusBoundedTail() async throws {
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 2.0)], duration: 2.0)
        let (wav, summary) = try await render(song)
        #expect(wav.frameCount == summary.frames)
        #expect(wav.seconds >= 2.0)
        #expect(wav.seconds <= 2.0 + 1.0 + 0.05, "rendered \(wav.seconds) s for a 2 s song")
        // The note is released at the very end, so the tail carries its decay: not silent.
        let tail = wav.monoFloat[Int(2.0 * 44_100)...]
        #expect(WAVAnalysis.peak(tail) > 0.001)
    }

    @Test("a song that ends in silence gets no silent tail (FluidSynth appends 2 s)")
    func silentEndingGetsNoTail() async throws {
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.2)], duration: 3.0)
        let (wav, summary) = try await render(song)
        #expect(wav.seconds >= 3.0)
        #expect(summary.tailSeconds < 0.05, "tail of \(summary.tailSeconds) s after a silent ending")
    }

    @Test("the header of a rendered WAV matches its data")
    func headerMatchesData() async throws {
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.5)], duration: 0.5)
        let (wav, summary) = try await render(song)
        #expect(wav.dataSize == summary.frames * 4)
        #expect(wav.riffSize == wav.dataSize + 36)
    }

    @Test("a hand-built song with out-of-order, negative or non-finite times renders without crashing")
    func oddTimesAreSafe() async throws {
        let events = [
            MIDITimedEvent(seconds: 0.3, message: .noteOn(channel: 0, key: 60, velocity: 90)),
            MIDITimedEvent(seconds: 0.1, message: .noteOff(channel: 0, key: 60, velocity: 0)),
            MIDITimedEvent(seconds: -4, message: .noteOn(channel: 1, key: 64, velocity: 90)),
            MIDITimedEvent(seconds: .nan, message: .noteOff(channel: 1, key: 64, velocity: 0)),
            MIDITimedEvent(seconds: .infinity, message: .systemExclusive([0x7E, 0x7F, 0x09, 0x01])),
        ]
        let (wav, summary) = try await render(MIDISong(events: events, durationSeconds: 0.5))
        #expect(wav.frameCount == summary.frames)
        #expect(wav.seconds >= 0.5 && wav.seconds <= 1.55)
    }

    @Test("an empty song renders a valid, nearly empty WAV")
    func emptySong() async throws {
        let (wav, summary) = try await render(MIDISong(events: [], durationSeconds: 0))
        #expect(wav.seconds < 0.05)
        #expect(wav.frameCount == summary.frames)
    }
}
