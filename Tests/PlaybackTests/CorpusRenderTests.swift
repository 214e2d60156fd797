import Foundation
import MIDI
@testable import Playback
import Testing

/// Every file of the jazz-soft MIDI test corpus through the real reader and engine: the valid
/// ones (including those Debian's FluidSynth renders as 0 frames) must sound and last as long as
/// their tempo map says; the broken ones must fail with one clear line, never crash.
@Suite("Corpus rendering")
struct CorpusRenderTests {
    /// <worktree>/../shared/corpus/jazz-soft-midi, found from this file's path.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/corpus/jazz-soft-midi")

    /// The files our reader rejects, with the reason: truncated, empty, undefined system
    /// messages whose length cannot be known, and files that are not MIDI at all.
    static let invalid: Set<String> = [
        "LICENSE.md", // not MIDI
        "test-corrupt-file-missing-byte.mid", // track chunk longer than the file
        "test-empty-file.mid", // zero bytes
        "test-illegal-message-all.mid", // undefined 0xF4 inside a track
        "test-illegal-message-f4.mid",
        "test-illegal-message-f5.mid",
        "test-not-a-midi-file.mid", // text
        "test-syx-7e-06-01-id-request.syx", // a bare SysEx dump, not a Standard MIDI File
    ]

    static func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
    }

    @Test("the corpus is where the tests expect it")
    func corpusIsPresent() throws {
        let files = try #require(try? Self.files(), "MIDI corpus missing at \(Self.corpus.path): clone shared/ beside the worktree")
        #expect(files.count >= 70, "only \(files.count) files in \(Self.corpus.path)")
        #expect(Self.invalid.isSubset(of: Set(files)))
    }

    @Test("every valid corpus file renders audible audio as long as its tempo map, every invalid one fails clearly")
    func everyFile() async throws {
        let files = try #require(try? Self.files(), "MIDI corpus missing at \(Self.corpus.path)")
        // The corpus holds about 2.5 hours of music (two "all sounds" files last ~55 minutes
        // each). At a quarter of the CD rate the same engine renders it four times faster, which
        // keeps this test under a minute; pitch and timing tests elsewhere use 44.1 kHz.
        let soundFont = try await SoundFont.load(sampleRate: 11_025)
        var rendered = 0
        for name in files {
            let path = Self.corpus.appendingPathComponent(name).path
            let song: MIDISong
            do {
                song = try MIDIFileReader.read(contentsOfFile: path)
            } catch {
                #expect(Self.invalid.contains(name), "\(name) rejected: \(error)")
                #expect(!error.description.isEmpty && !error.description.contains("\n"), "\(name): \(error)")
                continue
            }
            #expect(!Self.invalid.contains(name), "\(name) should have been rejected")
            let measured = try await MeasuringOutput.measure(song, soundFont: soundFont)
            let seconds = Double(measured.frames) / Double(soundFont.sampleRate)
            #expect(seconds >= song.durationSeconds - 0.001, "\(name): \(seconds) s for \(song.durationSeconds) s")
            #expect(seconds <= song.durationSeconds + 0.05 + 1.0, "\(name): \(seconds) s for \(song.durationSeconds) s")
            if song.hasSoundingNotes {
                #expect(measured.rms > 0.001, "\(name) is silent: RMS \(measured.rms)")
            }
            rendered += 1
        }
        #expect(rendered == files.count - Self.invalid.count)
    }
}

extension MIDISong {
    /// Whether any note-on with a non-zero velocity is in the song (the others are silent by design).
    var hasSoundingNotes: Bool {
        events.contains { if case let .noteOn(_, _, velocity) = $0.message { velocity > 0 } else { false } }
    }
}

/// Renders a song offline through the public source API, keeping only its length and loudness,
/// so the long corpus files (up to 12 minutes) need no disk and no big arrays.
enum MeasuringOutput {
    static func measure(_ song: MIDISong, soundFont: SoundFont) async throws -> (frames: Int, rms: Double) {
        let source = try PlaybackSource(song: song, soundFont: soundFont)
        defer { source.stop() }
        var buffer = [Int16](repeating: 0, count: 8192 * 2)
        var frames = 0
        let decimation = 8
        var sumOfSquares: Int64 = 0
        var measuredSamples = 0
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
            if count == 0 { break }
            // One sample in `decimation` of each channel: the test target is built in debug, where
            // touching every sample of 12-minute songs would dominate the suite's time, and an
            // RMS estimate over ~5,000 samples a second is as good for telling sound from silence.
            sumOfSquares += buffer.withUnsafeBufferPointer { samples in
                var sum: Int64 = 0
                for index in stride(from: 0, to: count * 2, by: decimation * 2) {
                    let left = Int64(samples[index]), right = Int64(samples[index + 1])
                    sum &+= left &* left &+ right &* right
                }
                return sum
            }
            measuredSamples += 2 * ((count + decimation - 1) / decimation)
            frames += count
            await Task.yield()
        }
        guard frames > 0 else { return (0, 0) }
        return (frames, (Double(sumOfSquares) / Double(measuredSamples)).squareRoot() / 32768)
    }
}
