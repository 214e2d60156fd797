import Glibc

/// The inaudible signal `keep_alive` plays to an idle speaker so that it does not power itself off.
///
/// Many Bluetooth speakers switch off after some minutes without sound, and they judge "sound" by
/// the samples, not by the stream: an open stream of digital zeros counts as silence. So the signal
/// is not zeros: a 1 s burst of a 30 Hz sine every 5 s, at −60 dBFS at its peak and shaped by a
/// raised-cosine envelope (no click at either end). 30 Hz is below what a portable speaker's driver
/// reproduces and −60 dBFS is at the noise floor of a quiet room, so nobody hears it; a burst every
/// few seconds is far more often than any speaker's power-off timer (minutes) needs.
///
/// `next()` never allocates: it is called from real-time audio callbacks.
struct KeepAliveSignal: Sendable {
    /// Peak level, full scale = 1: −60 dBFS.
    static let peak: Float = 0.001
    /// The tone's frequency, below what small speakers reproduce.
    static let frequency = 30.0
    /// Length of one burst.
    static let burstSeconds = 1.0
    /// From the start of one burst to the start of the next.
    static let periodSeconds = 5.0

    let sampleRate: Int
    private let burstFrames: Int
    private let periodFrames: Int
    /// Frames produced so far, modulo the period.
    private var frame = 0

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
        burstFrames = Int(Self.burstSeconds * Double(sampleRate))
        periodFrames = Int(Self.periodSeconds * Double(sampleRate))
    }

    /// The next sample (the same on both channels).
    mutating func next() -> Float {
        defer { frame = (frame + 1) % periodFrames }
        guard frame < burstFrames else { return 0 }
        let time = Double(frame) / Double(sampleRate)
        let envelope = sin(Double.pi * Double(frame) / Double(burstFrames))
        return Self.peak * Float(envelope * envelope * sin(2 * Double.pi * Self.frequency * time))
    }
}
