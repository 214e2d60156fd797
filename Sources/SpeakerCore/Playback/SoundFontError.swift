/// Why a SoundFont could not be loaded or used.
public enum SoundFontError: Error, Equatable, Sendable {
    /// Nothing readable at the path.
    case missing(path: String)
    /// The file exists but is not a SoundFont 2 file (wrong magic, or FluidSynth rejected it).
    case invalid(path: String)
    /// FluidSynth could not allocate one of its objects.
    case outOfMemory(String)
    /// Another song is still using this SoundFont's synthesiser.
    case inUse(path: String)
    /// libfluidsynth could not be opened (not installed, or too old); the loader's reason.
    case libraryUnavailable(reason: String)
}

extension SoundFontError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .missing(path) where path.hasSuffix("/" + SoundFont.packagedFileName):
            "soundfont \(path) not found; install timgm6mb-soundfont or pass --soundfont FILE"
        case let .missing(path):
            // Another font the person named: installing the packaged one would not help.
            "soundfont \(path) not found or not readable; check the path given (--soundfont or soundfont =)"
        case let .invalid(path):
            "soundfont \(path) is not a valid SoundFont 2 file (corrupt or another format); pass --soundfont FILE"
        case let .outOfMemory(what):
            "could not create the \(what): out of memory"
        case let .inUse(path):
            "soundfont \(path) is already playing another song; stop it first"
        case let .libraryUnavailable(reason):
            "FluidSynth is not available (\(reason)); install libfluidsynth3"
        }
    }
}
