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
    public static let defaultPath = "/usr/share/sounds/sf2/TimGM6mb.sf2"
    /// CD rate; what `fluidsynth -F` renders at too, so outputs compare sample for sample.
    public static let defaultSampleRate = 44_100

    public let path: String
    public let sampleRate: Int
    let synthesizer: Synthesizer
    private let leased = Mutex(false)

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
    func lease() throws(SoundFontError) -> Synthesizer {
        let taken = leased.withLock { inUse in
            if inUse { return false }
            inUse = true
            return true
        }
        guard taken else { throw .inUse(path: path) }
        synthesizer.reset()
        return synthesizer
    }

    /// Gives the synthesiser back after `lease()`.
    func releaseLease() {
        leased.withLock { $0 = false }
    }
}
