/// An output as users name it on the command line (`speakerd --audio-output SPEC`):
/// `file:/ABSOLUTE/PATH.wav`, `alsa:DEVICE`, `pulseaudio` or `null`.
public enum AudioOutputSpec: Sendable, Equatable {
    case file(path: String)
    case alsa(device: String)
    case pulseAudio
    case null

    /// The forms accepted by `init(parsing:)`, for help texts and error messages.
    public static let accepted = "file:/PATH.wav, alsa:DEVICE, pulseaudio or null"

    /// BlueALSA's A2DP PCM for a connected speaker: the default output once a speaker is connected.
    public static func bluealsa(address: String) -> AudioOutputSpec {
        .alsa(device: "bluealsa:DEV=\(address.uppercased()),PROFILE=a2dp")
    }

    public init(parsing text: String) throws(AudioOutputSpecError) {
        let spec = text.trimmingWhitespace
        guard !spec.isEmpty else { throw AudioOutputSpecError(spec: text, problem: .empty) }
        guard !spec.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw AudioOutputSpecError(spec: text, problem: .controlCharacters)
        }
        switch spec.lowercased() {
        case "null": self = .null; return
        case "pulseaudio", "pulse": self = .pulseAudio; return
        default: break
        }
        guard let colon = spec.firstIndex(of: ":") else { throw AudioOutputSpecError(spec: text, problem: .unknownKind) }
        let kind = spec[..<colon].lowercased()
        let argument = String(spec[spec.index(after: colon)...])
        switch kind {
        case "file":
            guard !argument.isEmpty else { throw AudioOutputSpecError(spec: text, problem: .missingPath) }
            // The daemon's working directory is `/`: a relative path would land somewhere surprising.
            guard argument.hasPrefix("/") else { throw AudioOutputSpecError(spec: text, problem: .relativePath) }
            guard !argument.hasSuffix("/") else { throw AudioOutputSpecError(spec: text, problem: .directoryPath) }
            self = .file(path: argument)
        case "alsa":
            guard !argument.isEmpty else { throw AudioOutputSpecError(spec: text, problem: .missingDevice) }
            guard !argument.contains(where: \.isWhitespace) else { throw AudioOutputSpecError(spec: text, problem: .whitespaceInDevice) }
            self = .alsa(device: argument)
        case "pulseaudio", "pulse", "null":
            throw AudioOutputSpecError(spec: text, problem: .unexpectedArgument(kind: kind))
        default:
            throw AudioOutputSpecError(spec: text, problem: .unknownKind)
        }
    }
}

extension AudioOutputSpec: CustomStringConvertible {
    /// The spec in the form `init(parsing:)` reads back.
    public var description: String {
        switch self {
        case let .file(path): "file:\(path)"
        case let .alsa(device): "alsa:\(device)"
        case .pulseAudio: "pulseaudio"
        case .null: "null"
        }
    }
}

/// A `--audio-output` value that names no output we can build.
public struct AudioOutputSpecError: Error, Equatable, Sendable {
    public enum Problem: Equatable, Sendable {
        case empty
        case controlCharacters
        case unknownKind
        case missingPath
        case relativePath
        case directoryPath
        case missingDevice
        case whitespaceInDevice
        case unexpectedArgument(kind: String)
    }

    public var spec: String
    public var problem: Problem
}

extension AudioOutputSpecError: CustomStringConvertible {
    public var description: String {
        let why = switch problem {
        case .empty: "it is empty"
        case .controlCharacters: "it contains control characters"
        case .unknownKind: "unknown output kind"
        case .missingPath: "file: needs a path"
        case .relativePath: "file: needs an absolute path"
        case .directoryPath: "file: needs a file path, not a directory"
        case .missingDevice: "alsa: needs a device name (e.g. alsa:default)"
        case .whitespaceInDevice: "an ALSA device name has no spaces"
        case let .unexpectedArgument(kind): "\(kind) takes no argument"
        }
        return "invalid audio output '\(spec)': \(why); expected \(AudioOutputSpec.accepted)"
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        var scalars = Substring(self)
        while scalars.first?.isWhitespace == true { scalars.removeFirst() }
        while scalars.last?.isWhitespace == true { scalars.removeLast() }
        return String(scalars)
    }
}
