import Foundation

/// Sample analysis for tests that judge rendered audio: pitch by Goertzel energy, loudness by RMS,
/// note starts by onset detection. Inputs are mono samples scaled to -1...1 (`WAVFile.monoFloat`).
public enum WAVAnalysis {
    /// The energy of `frequency` over `samples` (Goertzel algorithm: one DFT bin, any frequency),
    /// normalised by the length so windows of different sizes compare.
    public static func energy(at frequency: Double, in samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        guard !samples.isEmpty else { return 0 }
        let omega = 2 * Double.pi * frequency / Double(sampleRate)
        let coefficient = 2 * cos(omega)
        var previous = 0.0, beforePrevious = 0.0
        let count = samples.count
        for (index, sample) in samples.enumerated() {
            // A Hann window keeps a strong neighbour's leakage out of the bin we measure.
            let window = count > 1 ? 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count - 1)) : 1
            let current = Double(sample) * window + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        return power / Double(samples.count * samples.count)
    }

    /// Root mean square of `samples` (0 for none).
    public static func rms(_ samples: ArraySlice<Float>) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(samples.count)).squareRoot()
    }

    /// RMS of consecutive windows of `windowSeconds`.
    public static func rmsPerWindow(_ samples: [Float], sampleRate: Int, windowSeconds: Double) -> [Double] {
        let window = max(1, Int(windowSeconds * Double(sampleRate)))
        return stride(from: 0, to: samples.count, by: window).map {
            rms(samples[$0..<min($0 + window, samples.count)])
        }
    }

    /// Times (seconds) at which the signal starts sounding: the first sample of a 5 ms window whose
    /// RMS exceeds `threshold` and exceeds `rise` times the RMS of the window 20 ms before it —
    /// a new note, not a louder moment of a held one. Onsets closer than `minimumGap` merge.
    public static func onsets(
        _ samples: [Float], sampleRate: Int,
        threshold: Double = 0.002, rise: Double = 4, minimumGap: Double = 0.1
    ) -> [Double] {
        let windowSeconds = 0.005
        let levels = rmsPerWindow(samples, sampleRate: sampleRate, windowSeconds: windowSeconds)
        let lookBack = 4
        var result: [Double] = []
        for index in levels.indices where levels[index] > threshold {
            let before = index >= lookBack ? levels[index - lookBack] : 0
            guard levels[index] > before * rise else { continue }
            let time = Double(index) * windowSeconds
            if let last = result.last, time - last < minimumGap { continue }
            result.append(time)
        }
        return result
    }

    /// The time of the first sample whose magnitude exceeds `threshold`, or nil for silence.
    public static func firstSound(_ samples: [Float], sampleRate: Int, threshold: Float = 0.001) -> Double? {
        samples.firstIndex { abs($0) > threshold }.map { Double($0) / Double(sampleRate) }
    }

    /// The index of the first place where two renderings differ (compared up to the shorter one's
    /// end), or nil when they agree sample for sample.
    public static func firstDifference<Sample: Equatable>(_ heard: some Sequence<Sample>, _ wanted: some Sequence<Sample>) -> Int? {
        zip(heard, wanted).enumerated().first { $0.element.0 != $0.element.1 }?.offset
    }

    /// Sign changes a second: twice a steady tone's frequency (60 for 30 Hz).
    public static func zeroCrossingsPerSecond(_ samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        var crossings = 0
        for index in samples.indices.dropFirst() where (samples[index - 1] < 0) != (samples[index] < 0) { crossings += 1 }
        return Double(crossings) / (Double(samples.count) / Double(sampleRate))
    }

    /// The largest magnitude in `samples`.
    public static func peak(_ samples: ArraySlice<Float>) -> Float {
        samples.reduce(0) { max($0, abs($1)) }
    }

    /// How many 100 ms windows of a recording are loud (rms > 0.01), and how many of those have
    /// their energy at 440 Hz rather than at its octaves or neighbours. Counted window by window
    /// because a busy test machine can starve the audio thread: a recording may carry dropouts,
    /// but a song that reaches the server sounds clean between them.
    public static func a4Windows(_ samples: [Float], sampleRate: Int = 44_100) -> (loud: Int, clean: Int) {
        let length = sampleRate / 10
        var loud = 0, clean = 0
        for start in stride(from: 0, to: samples.count - length, by: length / 2) {
            let window = samples[start..<(start + length)]
            guard rms(window) > 0.01 else { continue }
            loud += 1
            let at440 = energy(at: 440, in: window, sampleRate: sampleRate)
            let others = [220.0, 330, 494, 880].map { energy(at: $0, in: window, sampleRate: sampleRate) }
            if others.allSatisfy({ at440 > 20 * $0 }) { clean += 1 }
        }
        return (loud, clean)
    }
}
