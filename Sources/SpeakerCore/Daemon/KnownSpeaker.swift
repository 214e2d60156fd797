#if canImport(FoundationEssentials)
import BlueZ
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
struct StateFile: Equatable, Sendable, Codable {
    static let currentVersion = 1

    var version: Int
    var speakers: [KnownSpeaker]

    enum CodingKeys: String, CodingKey { case version, speakers }

    static let empty = StateFile(version: currentVersion, speakers: [])

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
