import AsyncSignals
import Foundation
@testable import Playback
import TestSupport
import Testing

/// A tiny valid file can hold hours of rest: `render` must say so before it writes gigabytes of
/// silence, and never write a WAV whose 32-bit sizes cannot describe its audio.
@Suite("Render limits: long rests, the 4 GiB WAV limit")
struct RenderLimitsTests {
    func write(_ bytes: [UInt8], in directory: URL, as name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a 52-byte file with a 7-hour rest is refused at once, naming what fits in a WAV, and nothing is written")
    func sevenHourRestIsRefused() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = LongRestSong.bytes(seconds: 7 * 3600)
        #expect(bytes.count <= 52)
        let song = try write(bytes, in: directory, as: "rest.mid")
        let output = directory.appendingPathComponent("rest.wav").path
        let started = ContinuousClock.now
        let error = await #expect(throws: RenderError.self) { try await RenderRequest(midiPath: song, outputPath: output).run() }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error?.description == "\(song) lasts 7 h 0 min; a WAV file holds at most 4 GiB, 6 h 45 min of this audio, so nothing was written")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["rest.mid"])
    }

    @Test("a song longer than --max-duration is refused up front with its length")
    func maxDurationRefuses() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let song = try write(LongRestSong.bytes(seconds: 2 * 3600), in: directory, as: "rest.mid")
        let output = directory.appendingPathComponent("rest.wav").path
        let error = await #expect(throws: RenderError.self) {
            try await RenderRequest(midiPath: song, outputPath: output, maxDurationSeconds: 600).run()
        }
        #expect(error?.description == "\(song) lasts 2 h 0 min (7200 s), longer than the 600 s allowed; "
            + "nothing was written (raise --max-duration to render it)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["rest.mid"])
    }

    @Test("the WAV header's size limit: 4 GiB of data less its 36 header bytes, 6 h 45 min at 44.1 kHz stereo")
    func headerLimit() {
        #expect(WAVHeader.maxDataBytes + WAVHeader.size - 8 == Int(UInt32.max))
        let seconds = WAVHeader.maxSeconds(sampleRate: 44_100)
        #expect(seconds > 6.76 * 3600 && seconds < 6.77 * 3600)
        #expect(seconds.spokenHoursMinutes == "6 h 45 min")
        // The largest data size is written exactly; the header never wraps around.
        let header = WAVHeader(sampleRate: 44_100, channels: 2, dataBytes: WAVHeader.maxDataBytes).bytes
        #expect(Array(header[4..<8]) == [0xFF, 0xFF, 0xFF, 0xFF])
    }

    @Test("a cancelled render removes its partial file and writes nothing")
    func cancelledRenderLeavesNothing() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let song = try write(LongRestSong.bytes(seconds: 3600), in: directory, as: "rest.mid")
        let output = directory.appendingPathComponent("rest.wav").path
        let render = Task { try await RenderRequest(midiPath: song, outputPath: output).run() }
        let deadline = ContinuousClock.now + .seconds(20)
        while try FileManager.default.contentsOfDirectory(atPath: directory.path).count < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        render.cancel()
        let error = await #expect(throws: RenderError.self) { try await render.value }
        #expect(error == .cancelled(output: output))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["rest.mid"])
    }
}
