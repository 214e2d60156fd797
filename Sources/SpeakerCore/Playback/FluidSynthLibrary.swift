internal import CFluidSynth

/// libfluidsynth, opened on first use instead of linked (see `CFluidSynth.h` for why).
///
/// Every FluidSynth object takes its entry points from `api()`, so nothing can call into the
/// library before it is open, and the daemon pays for it (about 80 shared libraries) only when
/// the soundfont preload or a song needs it. Where the library is missing, that first use throws
/// `SoundFontError.libraryUnavailable` with the loader's one-line reason and the daemon carries
/// on without playback, rather than failing to start.
enum FluidSynthLibrary {
    /// The loaded library's functions; the C table's fields are named after them.
    typealias API = SpeakerdFluidSynth

    /// Debian 12's libfluidsynth3; the unversioned name exists only where the -dev package is.
    static let candidates = ["libfluidsynth.so.3", "libfluidsynth.so"]

    /// Opened once per process; a failure is kept too (the library does not appear by itself).
    private static let shared: Result<API, SoundFontError> = {
        var firstError: SoundFontError?
        for name in candidates {
            switch Result(catching: { () throws(SoundFontError) in try open(name) }) {
            case .success(let api):
                FluidSynthLog.install(api)
                completeOneTimeSetUp(api)
                return .success(api)
            case .failure(let error):
                if firstError == nil { firstError = error }
            }
        }
        return .failure(firstError ?? .libraryUnavailable(reason: "no library name to try"))
    }()

    /// Runs FluidSynth's own process-wide set-up, so that it is complete before `api()` returns.
    ///
    /// The first `new_fluid_synth` in a process fills FluidSynth's shared tables (the SoundFont
    /// default modulators, the dither noise), and one created on another thread meanwhile does not
    /// wait for it: it copies the modulators before they are written and plays without them, with
    /// no velocity or volume attenuation (2.4 to 2.7 times as loud). So songs starting together in
    /// a fresh process could sound different, some far too loud. Making a first synthesiser here,
    /// while every other caller of `api()` waits for the library, closes that window.
    private static func completeOneTimeSetUp(_ fluid: API) {
        guard let settings = fluid.new_fluid_settings() else { return }
        defer { fluid.delete_fluid_settings(settings) }
        // Made only for its side effect, so as small as FluidSynth allows (0.2 ms beyond the set-up).
        _ = fluid.fluid_settings_setint(settings, "synth.polyphony", 1)
        _ = fluid.fluid_settings_setint(settings, "synth.reverb.active", 0)
        _ = fluid.fluid_settings_setint(settings, "synth.chorus.active", 0)
        if let synthesizer = fluid.new_fluid_synth(settings) { fluid.delete_fluid_synth(synthesizer) }
    }

    /// The process's FluidSynth, opening it on first use.
    static func api() throws(SoundFontError) -> API {
        try shared.get()
    }

    /// Opens `library` (a soname or a path) and resolves every function speakerd calls.
    static func open(_ library: String) throws(SoundFontError) -> API {
        var message = [CChar](repeating: 0, count: 512)
        guard let table = speakerd_fluidsynth_load(library, &message, message.count) else {
            let reason = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw .libraryUnavailable(reason: reason)
        }
        return table.pointee
    }
}
