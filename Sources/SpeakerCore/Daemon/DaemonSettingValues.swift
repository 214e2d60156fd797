/// The small value types a `DaemonConfiguration` is made of, each parsed from the text a user
/// writes in the config file or on the command line.

/// Which message bus speakerd serves its API on and reaches BlueZ through.
public enum BusSelection: Equatable, Sendable, CustomStringConvertible {
    /// The system bus; `DBUS_SYSTEM_BUS_ADDRESS` overrides its default socket.
    case system
    /// The caller's session bus (development and tests).
    case session
    /// An explicit D-Bus address such as `unix:path=/tmp/bus`.
    case address(String)

    /// Parses `system`, `session` or a D-Bus address (anything containing `:` and `=`).
    public init(parsing text: String) throws(DaemonSettingError) {
        switch text {
        case "system": self = .system
        case "session": self = .session
        case let other where other.contains(":" as Character) && other.contains("=" as Character): self = .address(other)
        default:
            throw DaemonSettingError(setting: "bus", value: text,
                                     expected: "system, session or a D-Bus address such as unix:path=/run/bus")
        }
    }

    public var description: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
    }
}

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

/// What playback does when the speaker drops in the middle of a song.
public enum SpeakerLostBehaviour: String, Equatable, Sendable, CaseIterable {
    /// Hold the position and resume once the speaker is back (the default).
    case pause
    /// End the song; the user starts it again.
    case stop
}

/// A value that does not fit its setting; the caller adds where it came from (file:line or flag).
public struct DaemonSettingError: Error, Equatable, Sendable, CustomStringConvertible {
    public let setting: String
    public let value: String
    public let expected: String

    public var description: String {
        "bad value '\(value)' for \(setting) (expected \(expected))"
    }
}
