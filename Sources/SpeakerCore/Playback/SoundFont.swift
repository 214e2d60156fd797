import AsyncSignals
internal import CFluidSynth
import Glibc
import Synchronization

/// A SoundFont loaded into its own synthesiser, ready to play song after song.
///
/// Loading a SoundFont takes tens of milliseconds even for a small GM font (much more for large
/// ones), which is why it happens once, off the caller's thread, and the result is kept: a play
/// request then only resets the synthesiser (microseconds) before its first frame. The daemon starts
/// `load` as a polite deferred task after start-up so it never delays the critical path.
///
/// One song at a time: `lease()` hands the synthesiser to a single `PlaybackSource` and fails with
/// `SoundFontError.inUse` while another one holds it.
public final class SoundFont: Sendable {
    /// Debian's `timgm6mb-soundfont`: small (6 MB), General MIDI complete, installed by scripts/setup.
    public static let defaultPath = "/usr/share/sounds/sf2/" + packagedFileName
    /// The file Debian's timgm6mb-soundfont installs.
    public static let packagedFileName = "TimGM6mb.sf2"
    /// CD rate; what `fluidsynth -F` renders at too, so outputs compare sample for sample.
    public static let defaultSampleRate = 44_100
    /// `rate` if a song may be rendered at it: a device that says another (a broken reply) gets
    /// the font's own rate, and its server or plugin resamples. What `lease(sampleRate:)` and the
    /// idle keep-alive both go by.
    public static func playableRate(_ rate: Int?) -> Int? {
        rate.flatMap { (8_000...192_000).contains($0) ? $0 : nil }
    }

    public let path: String
    /// The rate the font was loaded at: songs render at it unless their device has its own.
    public let sampleRate: Int
    let synthesizer: Synthesizer
    private let leased = Mutex(false)
    /// A synthesiser at another rate, playing the same font (`lease(sampleRate:)`): kept for the
    /// next song, which most likely goes to the same device. One at most: about 0.75 MiB
    /// (FluidSynth's voices, reverb and chorus; the font's samples stay the loader's).
    private let atOtherRate = Mutex<Synthesizer?>(nil)

    private init(path: String, synthesizer: Synthesizer) {
        self.path = path
        self.sampleRate = synthesizer.sampleRate
        self.synthesizer = synthesizer
    }

    /// Loads the SoundFont at `path` on a dedicated thread and returns when it is ready.
    ///
    /// Throws `SoundFontError.missing` when no file is there, `.invalid` when it is not a SoundFont.
    public static func load(path: String = defaultPath, sampleRate: Int = defaultSampleRate) async throws(SoundFontError) -> SoundFont {
        let result: Result<SoundFont, SoundFontError> = await withCheckedContinuation { continuation in
            // A plain thread rather than the cooperative pool: the load blocks on disk and parsing,
            // and must not take one of the few threads every async task in the process shares.
            DetachedThread.start(name: "soundfont-load") {
                continuation.resume(returning: Result { () throws(SoundFontError) in
                    try loadBlocking(path: path, sampleRate: sampleRate)
                })
            }
        }
        return try result.get()
    }

    /// The synchronous load; `load` runs it off the caller's thread.
    static func loadBlocking(path: String, sampleRate: Int) throws(SoundFontError) -> SoundFont {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR, access(path, R_OK) == 0
        else { throw .missing(path: path) }
        // fluid_is_soundfont checks the RIFF/sfbk magic, so a text file or a WAV is reported as such
        // rather than as a generic load failure.
        guard try FluidSynthLibrary.api().fluid_is_soundfont(path) != 0 else { throw .invalid(path: path) }
        let synthesizer = try Synthesizer(sampleRate: sampleRate)
        guard synthesizer.loadSoundFont(path: path) != nil else { throw .invalid(path: path) }
        return SoundFont(path: path, synthesizer: synthesizer)
    }

    /// Takes the synthesiser for one song, reset to its power-on state; release it when done.
    ///
    /// `sampleRate`: the rate of the song's device, when it has one of its own other than the
    /// font's (a sound server's sink or a BlueALSA PCM at 48 kHz): the song gets a synthesiser at
    /// that rate playing the same font (made once, about half a millisecond, no file read), so
    /// nothing between speakerd and the speaker resamples it. One song at a time, at any rate.
    func lease(sampleRate rate: Int? = nil) throws(SoundFontError) -> Synthesizer {
        let taken = leased.withLock { inUse in
            if inUse { return false }
            inUse = true
            return true
        }
        guard taken else { throw .inUse(path: path) }
        guard let rate = Self.playableRate(rate), rate != sampleRate else {
            synthesizer.reset()
            return synthesizer
        }
        // Under the lease no song renders, so the font may be taken up (`takeUpFont`).
        let other = atOtherRate.withLock { (kept: inout Synthesizer?) -> Synthesizer? in
            if let existing = kept, existing.sampleRate == rate { return existing }
            kept = synthesizer.fresh(sampleRate: rate)
            kept?.takeUpFont()
            return kept
        }
        guard let other else {
            releaseLease()
            throw .outOfMemory("FluidSynth synthesiser at \(rate) Hz")
        }
        other.reset()
        return other
    }

    /// Gives the synthesiser back after `lease()`.
    func releaseLease() {
        leased.withLock { $0 = false }
    }
}
