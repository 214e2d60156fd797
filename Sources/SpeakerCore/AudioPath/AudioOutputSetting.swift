
/// Where rendered audio goes (`--audio-output SPEC`, config key `audio_output`).
public enum AudioOutputSetting: Equatable, Sendable, CustomStringConvertible {
    /// BlueALSA for the connected speaker: the normal case on a speaker box.
    case automatic
    /// A named ALSA PCM such as `bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp` or `default`.
    case alsa(device: String)
    /// The speaker's own Bluetooth sink on the PulseAudio (or PipeWire-Pulse) server, never the default sink.
    case pulseAudio
    /// A WAV file written at the given path (tests, demos, headless renders).
    case file(path: String)
    /// Discards audio; playback timing still runs (tests).
    case null

    /// The forms `init(parsing:)` reads, as its errors name them.
    public static let accepted = "auto, alsa:DEVICE, pulseaudio, file:PATH or null"

    /// Parses `auto`, `alsa:DEVICE`, `pulseaudio`, `file:PATH` or `null` (the kind in any case,
    /// blanks around it ignored). A value that names no output is refused with what it lacks:
    /// a `file:` path must be absolute (speakerd runs in `/`, so a relative one would land
    /// somewhere surprising) and name a file, an ALSA device has no blanks, and no value may hold
    /// control characters (they would garble the one-line error and the journal).
    public init(parsing text: String) throws(AudioOutputSettingError) {
        func refuse(_ expected: String = Self.accepted) -> AudioOutputSettingError {
            AudioOutputSettingError(value: text, expected: expected)
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            // Shown escaped, so the error stays one line and the terminal is not told to beep.
            let shown = text.unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }
            throw AudioOutputSettingError(value: shown.joined(), expected: "\(Self.accepted), without control characters")
        }
        let spec = text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
        let value = String(spec)
        switch value.lowercased() {
        case "auto": self = .automatic; return
        case "pulseaudio", "pulse": self = .pulseAudio; return
        case "null": self = .null; return
        default: break
        }
        guard let colon = value.firstIndex(of: ":") else { throw refuse() }
        let kind = value[..<colon].lowercased()
        let argument = String(value[value.index(after: colon)...])
        switch kind {
        case "file":
            guard !argument.isEmpty else { throw refuse("a path after file:") }
            guard argument.hasPrefix("/") else { throw refuse("an absolute path after file:, as speakerd runs in /") }
            guard !argument.hasSuffix("/") else { throw refuse("a file's path after file:, not a directory's") }
            self = .file(path: argument)
        case "alsa":
            guard !argument.isEmpty else { throw refuse("an ALSA device after alsa:") }
            guard !argument.contains(where: \.isWhitespace) else { throw refuse("an ALSA device without blanks after alsa:") }
            self = .alsa(device: argument)
        case "auto", "pulseaudio", "pulse", "null":
            throw refuse("\(kind) alone, with nothing after it")
        default:
            throw refuse()
        }
    }

    public var description: String {
        switch self {
        case .automatic: "auto"
        case .alsa(let device): "alsa:\(device)"
        case .pulseAudio: "pulseaudio"
        case .file(let path): "file:\(path)"
        case .null: "null"
        }
    }
}

/// An `audio_output` value that names no output, and what it lacks; the configuration says
/// where the value came from.
public struct AudioOutputSettingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The value as given, control characters escaped.
    public let value: String
    /// What the value should have been, in words.
    public let expected: String

    public var description: String {
        "bad value '\(value)' for audio_output (expected \(expected))"
    }
}

extension AudioOutputSetting {
    /// The backend this setting names: the one place a setting meets its backend, so adding a
    /// backend is its file and one case here and in `init(parsing:)`.
    ///
    /// - Parameters:
    ///   - soundServers: where a PulseAudio/PipeWire server may be (`pulse_server`, `sound_server_user`).
    ///   - clock: paces the file and null outputs in real time and times BlueALSA's waits.
    public func backend(soundServers: SoundServerLocation, clock: any Clock<Duration> = ContinuousClock()) -> any AudioBackend {
        switch self {
        case .automatic:
            AutomaticBackend(blueALSA: .live(clock: clock), soundServer: SoundServerBackend(location: soundServers))
        case .alsa(let device): ALSABackend(device: device)
        case .pulseAudio: SoundServerBackend(location: soundServers)
        case .file(let path): FileBackend(path: path, clock: clock)
        case .null: NullBackend(clock: clock)
        }
    }
}
