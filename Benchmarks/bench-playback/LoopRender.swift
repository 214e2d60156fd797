import Foundation
import MIDI
import Playback

/// A practice loop rendered offline (`composer-cli render --loop A-B --loop-count N`) against
/// `fluidsynth -F` on the same passes: FluidSynth's shell has no section loop, so it is given a
/// MIDI file holding the passes written out one after another (what a composer would have to
/// make by hand). Also the time to arrange the loop, and the seam's jitter in frames.
enum LoopRender {
    struct Figures {
        var file: String
        var passes: Int
        var arrangeSeconds: Double
        var ours: Double
        var theirs: Double
        var seamJitterFrames: Int
    }

    static func measure(file: String, path: String, loop: String, passes: Int, runs: Int, font: SoundFont,
                        scratch: URL, fluidsynth: String) async throws -> Figures {
        let song = try MIDIFileReader.read(contentsOfFile: path)
        let arrangement = SongArrangement(loop: try LoopSection(parsing: loop), loopPasses: passes)
        var arranging: [Double] = [], ours: [Double] = [], theirs: [Double] = []
        var arranged = song
        for _ in 0..<runs {
            let start = ContinuousClock.now
            arranged = try arrangement.arrange(song)
            arranging.append(Measure.seconds(ContinuousClock.now - start))

            let ourOut = scratch.appendingPathComponent("loop-ours.wav").path
            let renderStart = ContinuousClock.now
            let summary = try await OfflineRenderer.render(arranged, soundFont: font, to: ourOut)
            ours.append(summary.audioSeconds / Measure.seconds(ContinuousClock.now - renderStart))

            let written = scratch.appendingPathComponent("loop-written-out.mid")
            try Data(standardMIDIFile(arranged)).write(to: written)
            let theirOut = scratch.appendingPathComponent("loop-theirs.wav").path
            let result = try Measure.run(fluidsynth, ["-ni", "-F", theirOut, SoundFont.defaultPath, written.path])
            theirs.append(Measure.wavSeconds(theirOut) / result.seconds)
        }
        return Figures(file: file, passes: passes, arrangeSeconds: Measure.median(arranging), ours: Measure.median(ours),
                       theirs: Measure.median(theirs), seamJitterFrames: seamJitter(arranged, song: song, loop: loop, passes: passes))
    }

    /// The largest difference, in frames at 44.1 kHz, between where a pass's first event falls
    /// and where N whole loop lengths put it: 0 means every seam is on its exact frame.
    static func seamJitter(_ arranged: MIDISong, song: MIDISong, loop: String, passes: Int) -> Int {
        guard let section = try? LoopSection(parsing: loop), let a = try? section.start.seconds(in: song),
              let b = try? section.end.seconds(in: song) else { return -1 }
        let length = b - a
        let firstInSection = song.events.first { $0.seconds >= a && $0.seconds < b }.map { $0.seconds - a } ?? 0
        var worst = 0
        for pass in 0..<passes {
            let expected = Int(((Double(pass) * length + firstInSection) * 44_100).rounded())
            let nearest = arranged.events.map { Int(($0.seconds * 44_100).rounded()) }.min { abs($0 - expected) < abs($1 - expected) } ?? 0
            worst = max(worst, abs(nearest - expected))
        }
        return worst
    }

    /// A format 0 file of `song`'s events at 1 ms a tick (1000 ticks a quarter at 60 BPM).
    static func standardMIDIFile(_ song: MIDISong) -> [UInt8] {
        func vlq(_ value: Int) -> [UInt8] {
            var bytes = [UInt8(value & 0x7F)]
            var rest = value >> 7
            while rest > 0 { bytes.insert(UInt8(rest & 0x7F) | 0x80, at: 0); rest >>= 7 }
            return bytes
        }
        var track: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x0F, 0x42, 0x40]  // 1,000,000 µs a quarter
        var now = 0
        for event in song.events {
            let tick = Int((event.seconds * 1000).rounded())
            let bytes: [UInt8]
            switch event.message {
            case let .noteOff(c, k, v): bytes = [0x80 | c, k, v]
            case let .noteOn(c, k, v): bytes = [0x90 | c, k, v]
            case let .polyPressure(c, k, p): bytes = [0xA0 | c, k, p]
            case let .controlChange(c, n, v): bytes = [0xB0 | c, n, v]
            case let .programChange(c, p): bytes = [0xC0 | c, p]
            case let .channelPressure(c, p): bytes = [0xD0 | c, p]
            case let .pitchBend(c, v): bytes = [0xE0 | c, UInt8(v & 0x7F), UInt8(v >> 7)]
            case let .systemExclusive(data): bytes = [0xF0] + vlq(data.count + 1) + data + [0xF7]
            }
            track += vlq(max(0, tick - now)) + bytes
            now = max(now, tick)
        }
        track += vlq(max(0, Int((song.durationSeconds * 1000).rounded()) - now)) + [0xFF, 0x2F, 0x00]
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, 0x03, 0xE8] + Array("MTrk".utf8) + be32(track.count) + track
    }
}
