import SpeakerdAPI

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

    /// Parses `auto`, `alsa:DEVICE`, `pulseaudio`, `file:PATH` or `null`.
    public init(parsing text: String) throws(DaemonSettingError) {
        let expected = "auto, alsa:DEVICE, pulseaudio, file:PATH or null"
        switch text {
        case "auto": self = .automatic
        case "pulseaudio", "pulse": self = .pulseAudio
        case "null": self = .null
        case _ where text.hasPrefix("alsa:") && text.count > 5:
            self = .alsa(device: String(text.dropFirst(5)))
        case _ where text.hasPrefix("file:") && text.count > 5:
            self = .file(path: String(text.dropFirst(5)))
        default:
            throw DaemonSettingError(setting: "audio_output", value: text, expected: expected)
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
