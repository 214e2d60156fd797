import AsyncSignals
import AudioPath
import Playback
import SpeakerdAPI
/// Reads speakerd's config file: one `key = value` per line.
///
/// The format is deliberately tiny so it can be documented in the file itself:
///
///     # comments start with '#' or ';' and run to the end of the line
///     adapter = hci0
///     auto_pick = yes
///     soundfont = "/usr/share/sounds/sf2/TimGM6mb.sf2"
///
/// Values may be wrapped in double quotes (to keep a '#' or leading spaces). Unknown keys,
/// repeated keys and bad values are errors with `file:line`, because a typo silently ignored
/// is a speaker that silently does not connect.
public struct ConfigFileParser: Sendable {
    /// Every key the file may set, with the text shown when its value is wrong.
    public static let knownKeys: [String] = [
        "adapter", "auto_pick", "play_timeout_seconds", "audio_output", "soundfont",
        "on_speaker_lost", "reconnect_max_seconds", "scan_seconds", "state_dir", "bus",
        "max_requests_per_client", "max_requests_total", "audio_device_grace_seconds", "pulse_server",
        "sound_server_user", "pre_roll_ms", "keep_alive", "first_volume",
        "read_budget_mib", "read_budget_per_client_mib", "max_queued_songs", "max_queue_mib",
    ]

    /// The smallest read budget accepted, in MiB: a song at the 16 MiB limit, plus its read buffer.
    public static let smallestReadBudgetMiB = 17

    /// The path used in error messages.
    public let path: String

    public init(path: String) { self.path = path }

    /// Applies every setting in `text` on top of `base`.
    public func parse(_ text: String, over base: DaemonConfiguration = .defaults)
        throws(ConfigurationError) -> DaemonConfiguration
    {
        var configuration = base
        var seen: [String: Int] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = rawLine.strippingBlanks()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw .invalidLine(path: path, line: lineNumber, problem: "expected 'key = value', found '\(line)'")
            }
            let key = line[..<equals].strippingBlanks()
            let value = try unquote(stripComment(String(line[line.index(after: equals)...])), line: lineNumber)
            guard Self.knownKeys.contains(key) else {
                throw .invalidLine(path: path, line: lineNumber,
                                   problem: "unknown key '\(key)' (known keys: \(Self.knownKeys.joined(separator: ", ")))")
            }
            if let first = seen[key] {
                throw .invalidLine(path: path, line: lineNumber, problem: "'\(key)' is already set on line \(first)")
            }
            seen[key] = lineNumber
            do {
                try Self.apply(key: key, value: value, to: &configuration)
            } catch {
                throw .invalidLine(path: path, line: lineNumber, problem: error.description)
            }
        }
        return configuration
    }

    /// Sets one key; shared with the command-line overrides so both accept the same values.
    static func apply(key: String, value: String, to configuration: inout DaemonConfiguration)
        throws(DaemonSettingError)
    {
        switch key {
        case "adapter":
            guard value.hasPrefix("hci"), value.count > 3, value.dropFirst(3).allSatisfy(\.isNumber) else {
                throw DaemonSettingError(setting: key, value: value, expected: "an adapter name such as hci0")
            }
            configuration.adapter = value
        case "auto_pick":
            configuration.autoPick = try parseBool(value, key: key)
        case "play_timeout_seconds":
            configuration.playTimeout = try parseSeconds(value, key: key, range: 1...3600)
        case "audio_output":
            do {
                configuration.audioOutput = try AudioOutputSetting(parsing: value)
            } catch {
                throw DaemonSettingError(setting: key, value: error.value, expected: error.expected)
            }
        case "soundfont":
            configuration.soundfont = try parseAbsolutePath(value, key: key)
        case "on_speaker_lost":
            guard let behaviour = SpeakerLostBehaviour(rawValue: value) else {
                throw DaemonSettingError(setting: key, value: value, expected: "pause or stop")
            }
            configuration.onSpeakerLost = behaviour
        case "reconnect_max_seconds":
            configuration.reconnectMax = try parseSeconds(value, key: key, range: 1...3600)
        case "scan_seconds":
            configuration.scanDuration = try parseSeconds(value, key: key, range: 1...300)
        case "state_dir":
            configuration.stateDirectory = try parseAbsolutePath(value, key: key)
        case "bus":
            configuration.bus = try BusSelection(parsing: value)
        case "max_requests_per_client":
            configuration.requestLimits.perClient = try parseCount(value, key: key, range: 1...SpeakerdRequestLimits.maximumTotal)
        case "max_requests_total":
            configuration.requestLimits.total = try parseCount(value, key: key, range: 1...SpeakerdRequestLimits.maximumTotal)
        case "audio_device_grace_seconds":
            configuration.audioDeviceGrace = try parseSeconds(value, key: key, range: 1...60)
        case "pulse_server":
            guard !value.isEmpty, !value.contains(where: \.isWhitespace) else {
                throw DaemonSettingError(setting: key, value: value,
                                         expected: "one sound server such as unix:/run/user/1000/pulse/native")
            }
            configuration.soundServers.configuredServer = value
        case "sound_server_user":
            guard !value.isEmpty, SoundServerLocation.runtimeDirectory(of: value) != nil else {
                throw DaemonSettingError(setting: key, value: value, expected: "an existing user name or numeric user id")
            }
            configuration.soundServers.user = value
        case "pre_roll_ms":
            configuration.preRoll = .milliseconds(try parseCount(value, key: key, range: 0...2000))
        case "keep_alive":
            // yes and no as before; silence and tone name what is played.
            if let sound = KeepAliveSound(rawValue: value.lowercased()), sound != .bursts {
                configuration.keepAlive = true
                configuration.keepAliveSound = sound
            } else {
                do { configuration.keepAlive = try parseBool(value, key: key) } catch {
                    throw DaemonSettingError(setting: key, value: value, expected: "yes, no, silence or tone")
                }
                configuration.keepAliveSound = .bursts
            }
        case "first_volume":
            configuration.firstVolume = try parseCount(value, key: key, range: VolumeChange.range)
        case "read_budget_mib":
            configuration.readBudget.total = try parseCount(value, key: key, range: smallestReadBudgetMiB...4096) << 20
        case "read_budget_per_client_mib":
            configuration.readBudget.perClient = try parseCount(value, key: key, range: smallestReadBudgetMiB...4096) << 20
        case "max_queued_songs":
            configuration.queueLimits.songs = try parseCount(value, key: key, range: 0...1024)
        case "max_queue_mib":
            configuration.queueLimits.bytes = try parseCount(value, key: key, range: 1...4096) << 20
        default:
            throw DaemonSettingError(setting: key, value: value, expected: "a known key")
        }
    }

    private func stripComment(_ value: String) -> String {
        // A comment after a value needs whitespace before it, so "alsa:x#1" keeps its '#'.
        guard !value.strippingBlanks().hasPrefix("\"") else { return value }
        var result = ""
        var previous: Character = " "
        for character in value {
            if (character == "#" || character == ";") && (previous == " " || previous == "\t") { break }
            result.append(character)
            previous = character
        }
        return result
    }

    private func unquote(_ value: String, line: Int) throws(ConfigurationError) -> String {
        let trimmed = value.strippingBlanks()
        guard trimmed.hasPrefix("\"") else { return trimmed }
        let body = trimmed.dropFirst()
        guard let close = body.firstIndex(of: "\"") else {
            throw .invalidLine(path: path, line: line, problem: "unterminated quoted value")
        }
        let rest = body[body.index(after: close)...].strippingBlanks()
        guard rest.isEmpty || rest.hasPrefix("#") || rest.hasPrefix(";") else {
            throw .invalidLine(path: path, line: line, problem: "unexpected text after quoted value: '\(rest)'")
        }
        return String(body[..<close])
    }

    private static func parseBool(_ value: String, key: String) throws(DaemonSettingError) -> Bool {
        switch value.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw DaemonSettingError(setting: key, value: value, expected: "yes or no")
        }
    }

    private static func parseSeconds(_ value: String, key: String, range: ClosedRange<Double>)
        throws(DaemonSettingError) -> Duration
    {
        guard let seconds = Double(value), seconds.isFinite, range.contains(seconds) else {
            throw DaemonSettingError(setting: key, value: value,
                                     expected: "a number of seconds from \(Int(range.lowerBound)) to \(Int(range.upperBound))")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    private static func parseCount(_ value: String, key: String, range: ClosedRange<Int>) throws(DaemonSettingError) -> Int {
        guard let count = Int(value), range.contains(count) else {
            throw DaemonSettingError(setting: key, value: value,
                                     expected: "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return count
    }

    private static func parseAbsolutePath(_ value: String, key: String) throws(DaemonSettingError) -> String {
        guard value.hasPrefix("/") else {
            throw DaemonSettingError(setting: key, value: value, expected: "an absolute path")
        }
        return value
    }
}
