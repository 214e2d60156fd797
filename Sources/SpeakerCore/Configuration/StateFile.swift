import BlueZ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A speaker speakerd has connected to before: what auto-connect tries at start-up.
public struct KnownSpeaker: Equatable, Sendable, Codable {
    public var address: BluetoothAddress
    /// The name BlueZ reported last time (`Alias`), shown to people.
    public var name: String
    /// When speakerd first connected to it.
    public var firstConnected: Date
    /// When speakerd last connected to it; the list is ordered by this, newest first.
    public var lastConnected: Date
    /// The speaker's volume in percent when it was last set or read through speakerd, restored
    /// when its audio device next appears; nil until then (and in files written before speakerd
    /// kept volumes, which therefore still load: the key is optional).
    public var volume: Int?

    public init(address: BluetoothAddress, name: String, firstConnected: Date, lastConnected: Date, volume: Int? = nil) {
        self.address = address
        self.name = name
        self.firstConnected = firstConnected
        self.lastConnected = lastConnected
        self.volume = volume
    }

    enum CodingKeys: String, CodingKey {
        case address, name, firstConnected, lastConnected, volume
    }
}

/// The on-disk shape of `state.json`. `version` comes first so a newer file is recognised
/// before anything else in it is trusted.
package struct StateFile: Equatable, Sendable, Codable {
    package static let currentVersion = 1

    package var version: Int
    package var speakers: [KnownSpeaker]

    package enum CodingKeys: String, CodingKey { case version, speakers }

    package init(version: Int, speakers: [KnownSpeaker]) {
        self.version = version
        self.speakers = speakers
    }

    package static let empty = StateFile(version: currentVersion, speakers: [])

    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

extension StateFile {
    /// The speakers a state file's text lists, as `load` would read them (for `composer-cli
    /// doctor`, which looks at the file without being the daemon); throws what is wrong with it.
    public static func knownSpeakers(inStateFile text: String) throws(StateFileProblem) -> [KnownSpeaker] {
        try decode(text).speakers
    }

    package static func decode(_ text: String) throws(StateFileProblem) -> StateFile {
        struct VersionOnly: Decodable { var version: Int }
        let data = Data(text.utf8)
        let version: Int
        do { version = try StateFile.decoder().decode(VersionOnly.self, from: data).version } catch {
            throw .unreadable("not a speakerd state file (no version field or not JSON)")
        }
        guard version <= StateFile.currentVersion else {
            throw .newerVersion(version)
        }
        guard version >= 1 else { throw .unreadable("unknown version \(version)") }
        do { return try StateFile.decoder().decode(StateFile.self, from: data) } catch {
            throw .unreadable("malformed contents (\(Self.summary(of: error)))")
        }
    }

    /// One entry per address: the most recently connected one wins (with the earliest first
    /// connection of them all), in the winner's place. Returns the addresses listed twice.
    package static func mergeDuplicates(_ speakers: inout [KnownSpeaker]) -> [BluetoothAddress] {
        var winner: [BluetoothAddress: Int] = [:]
        var earliest: [BluetoothAddress: Date] = [:]
        var duplicates: [BluetoothAddress] = []
        for (index, speaker) in speakers.enumerated() {
            earliest[speaker.address] = min(earliest[speaker.address] ?? speaker.firstConnected, speaker.firstConnected)
            guard let current = winner[speaker.address] else {
                winner[speaker.address] = index
                continue
            }
            if !duplicates.contains(speaker.address) { duplicates.append(speaker.address) }
            if speaker.lastConnected > speakers[current].lastConnected { winner[speaker.address] = index }
        }
        guard !duplicates.isEmpty else { return [] }
        speakers = speakers.enumerated().compactMap { index, speaker in
            guard winner[speaker.address] == index else { return nil }
            var kept = speaker
            kept.firstConnected = earliest[speaker.address] ?? speaker.firstConnected
            return kept
        }
        return duplicates
    }

    private static func summary(of error: Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
             DecodingError.valueNotFound(_, let context):
            let where_ = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return where_.isEmpty ? context.debugDescription : "\(where_): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, _):
            return "missing '\(key.stringValue)'"
        default:
            return String(describing: error)
        }
    }
}

/// Why a state file was not used.
public enum StateFileProblem: Error, CustomStringConvertible {
    case unreadable(String)
    case newerVersion(Int)

    public var description: String {
        switch self {
        case .unreadable(let detail): detail
        case .newerVersion(let version):
            "written by a newer speakerd (state version \(version), this one reads up to \(StateFile.currentVersion))"
        }
    }
}
