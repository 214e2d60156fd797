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
/// Some speakers sleep anyway: they judge the level, not the samples, and sleep on anything that
/// quiet. `keep_alive = tone` is for them (users report it works): a steady 30 Hz sine at 1.2 %
/// of full scale (about −38 dBFS), still below what a small speaker's driver reproduces well.
/// `keep_alive = silence` is for the opposite case, a speaker that stays on while a stream is
/// open: an open stream of digital zeros.
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

    /// `keep_alive = tone`'s level, full scale = 1: 1.2 %.
    static let toneLevel: Float = 0.012

    let sampleRate: Int
    let sound: KeepAliveSound
    private let burstFrames: Int
    private let periodFrames: Int
    /// Frames produced so far, modulo the period.
    private var frame = 0

    init(sampleRate: Int, sound: KeepAliveSound = .bursts) {
        self.sampleRate = sampleRate
        self.sound = sound
        burstFrames = Int(Self.burstSeconds * Double(sampleRate))
        periodFrames = Int(Self.periodSeconds * Double(sampleRate))
    }

    /// The next sample (the same on both channels).
    mutating func next() -> Float {
        defer { frame = (frame + 1) % periodFrames }
        switch sound {
        case .silence: return 0
        case .tone:
            // A whole number of 30 Hz cycles fits in the 5 s period, so the wrap keeps the phase.
            let time = Double(frame) / Double(sampleRate)
            return Self.toneLevel * Float(sin(2 * Double.pi * Self.frequency * time))
        case .bursts: break
        }
        guard frame < burstFrames else { return 0 }
        let time = Double(frame) / Double(sampleRate)
        let envelope = sin(Double.pi * Double(frame) / Double(burstFrames))
        return Self.peak * Float(envelope * envelope * sin(2 * Double.pi * Self.frequency * time))
    }
}

/// What `keep_alive` plays to an idle (or paused) speaker.
public enum KeepAliveSound: String, Sendable, Equatable, CaseIterable {
    /// `keep_alive = yes`: the inaudible bursts (1 s of 30 Hz at −60 dBFS every 5 s).
    case bursts
    /// `keep_alive = silence`: an open stream of digital zeros.
    case silence
    /// `keep_alive = tone`: a steady 30 Hz sine at 1.2 % of full scale, for speakers that sleep
    /// on digital silence and on the bursts alike.
    case tone
}
