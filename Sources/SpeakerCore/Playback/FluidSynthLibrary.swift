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
                return .success(api)
            case .failure(let error):
                if firstError == nil { firstError = error }
            }
        }
        return .failure(firstError ?? .libraryUnavailable(reason: "no library name to try"))
    }()

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
