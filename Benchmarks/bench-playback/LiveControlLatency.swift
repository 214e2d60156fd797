import Foundation
import MIDI
import Playback
import Synchronization

/// A live control (`composer-cli seek`, `loop`…) to the first sample of the new position, as the
/// player does it: the song re-arranged from where it is (`LiveControl.applied`,
/// `SongArrangement.arrangeLive`), handed to the source, and taken up by the device's next pull.
/// The device is a thread pulling 512-frame periods in real time (FluidSynth's audio driver
/// period, `DeviceOutput.periodFrames`: 11.6 ms at 44.1 kHz). The D-Bus hop and composer-cli's own
/// start are not in it (see "Play request → first audio frame" and the D-Bus figures).
enum LiveControlLatency {
    struct Figures {
        var file: String
        var events: Int
        /// Re-arranging the song from a mid-song position.
        var arrange: [Double]
        /// Handing the new timeline to the source (`replaceSong`: its scheduler, and the fresh
        /// synthesiser it plays on).
        var handOver: [Double]
        /// The control's start to the pull that plays the new position.
        var toFirstSample: [Double]
    }

    static let periodFrames = 512

    static func measure(file: String, path: String, commands: Int, font: SoundFont) async throws -> Figures {
        let song = try MIDIFileReader.read(contentsOfFile: path)
        let source = try PlaybackSource(song: song, soundFont: font)
        let pulls = Mutex<[ContinuousClock.Instant]>([])
        let running = Mutex(true)
        let period = Duration.seconds(Double(periodFrames) / Double(source.sampleRate))
        let device = Thread {
            var buffer = [Int16](repeating: 0, count: periodFrames * 2)
            var next = ContinuousClock.now
            while running.withLock({ $0 }) {
                let now = ContinuousClock.now
                pulls.withLock { $0.append(now) }
                _ = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
                next = next.advanced(by: period)
                let wait = ContinuousClock.now.duration(to: next)
                if wait > .zero { Thread.sleep(forTimeInterval: Measure.seconds(wait)) }
            }
        }
        device.start()
        defer { running.withLock { $0 = false } }

        var arranging: [Double] = [], handOvers: [Double] = [], latencies: [Double] = []
        let bars = song.bars?.barCount ?? 1
        var arrangement = SongArrangement()
        var here = 0.0
        for index in 0..<commands {
            // At a random moment of the device's period, as a person's command arrives.
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...60)))
            let start = ContinuousClock.now
            // Alternately a seek to a bar and a section loop there: both chase the state.
            let bar = 1 + (index * 7) % max(1, bars - 1)
            let control: LiveControl = index.isMultiple(of: 2)
                ? .seek(.bars(MIDIBarPosition(bar: bar)))
                : .loop(LoopSection(start: .bars(MIDIBarPosition(bar: bar)), end: .bars(MIDIBarPosition(bar: bar + 1))))
            arrangement = try control.applied(to: arrangement, at: here, in: song)
            let arranged = try arrangement.arrangeLive(song)
            arranging.append(Measure.seconds(ContinuousClock.now - start))
            // Handed over once replaceSong returns: it makes the new timeline's synthesiser
            // (`Synthesizer.fresh()`) first, and a pull meanwhile still plays the old one.
            let handing = ContinuousClock.now
            guard source.replaceSong(with: arranged) else { continue }  // the song had ended
            let handed = ContinuousClock.now
            handOvers.append(Measure.seconds(handed - handing))
            here = arrangement.songSeconds(atArranged: 0, in: song)
            // The first pull after the hand-over takes the new timeline up.
            var taken: ContinuousClock.Instant?
            while taken == nil {
                taken = pulls.withLock { $0.first { $0 > handed } }
                if taken == nil { try await Task.sleep(for: .milliseconds(1)) }
            }
            latencies.append(Measure.seconds(taken! - start))
        }
        return Figures(file: file, events: song.events.count, arrange: arranging, handOver: handOvers, toFirstSample: latencies)
    }
}
