import Foundation
import MIDI
@testable import Playback
import TestSupport
import Testing

/// `composer-cli render` as the user meets it: a WAV on success, one clear line on every failure.
@Suite("Render requests")
struct RenderRequestTests {
    /// <worktree>/../shared/corpus/jazz-soft-midi, found from this file's path.
    private static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../../shared/corpus/jazz-soft-midi").standardized
    private let scale = Self.corpus.appendingPathComponent("test-c-major-scale.mid").path

    @Test("a corpus file renders to a WAV that lasts its tempo map plus a short tail")
    func rendersCorpusFile() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("scale.wav").path
        let summary = try await RenderRequest(midiPath: scale, outputPath: output).run()
        let song = try MIDIFileReader.read(contentsOfFile: scale)
        let wav = try WAVFile(path: output)
        #expect(wav.frameCount == summary.frames)
        #expect(wav.seconds >= song.durationSeconds && wav.seconds <= song.durationSeconds + 1.05)
        #expect(WAVAnalysis.rms(wav.monoFloat[...]) > 0.001)
    }

    @Test("a missing MIDI file is named in the error")
    func missingMIDI() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("absent.mid").path
        let error = await #expect(throws: RenderError.self) {
            try await RenderRequest(midiPath: missing, outputPath: directory.appendingPathComponent("o.wav").path).run()
        }
        #expect(error?.description == "cannot read \(missing): No such file or directory")
    }

    @Test("a file that is not MIDI is rejected before any audio is written")
    func notMIDI() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = Self.corpus.appendingPathComponent("test-not-a-midi-file.mid").path
        let output = directory.appendingPathComponent("o.wav").path
        let error = await #expect(throws: RenderError.self) { try await RenderRequest(midiPath: bad, outputPath: output).run() }
        let message = error?.description ?? ""
        #expect(message.hasPrefix("\(bad) is not a playable MIDI file: byte 0: "))
        #expect(!message.contains("\n"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test("an output in a directory that does not exist fails clearly and leaves nothing behind")
    func unwritableOutput() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("missing/dir/o.wav").path
        let error = await #expect(throws: RenderError.self) { try await RenderRequest(midiPath: scale, outputPath: output).run() }
        #expect(error?.description == "cannot write WAV file \(output): No such file or directory")
    }

    @Test("an output path that is a directory fails clearly and leaves no temporary file")
    func outputIsDirectory() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("taken")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
        let error = await #expect(throws: RenderError.self) { try await RenderRequest(midiPath: scale, outputPath: target.path).run() }
        #expect(error?.description == "\(target.path) is a directory: name the WAV file to write in it (-o \(target.path)/song.wav)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["taken"])
    }

    @Test("a missing SoundFont is reported with what to do")
    func missingSoundFont() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let font = directory.appendingPathComponent("none.sf2").path
        let error = await #expect(throws: RenderError.self) {
            try await RenderRequest(midiPath: scale, outputPath: directory.appendingPathComponent("o.wav").path, soundFontPath: font).run()
        }
        #expect(error == .soundFont(.missing(path: font)))
    }
}
