import BlueZ
import SpeakerdAPI
/// Orders scan candidates for scan-and-pick: known > trusted > strongest signal.
///
/// Only audio sinks are eligible for auto-pick: connecting a phone or a keyboard because it
/// happened to be loudest would be worse than waiting for the user.
public struct RankedCandidate: Equatable, Sendable {
    public var address: BluetoothAddress
    public var name: String
    public var rssi: Int?
    /// speakerd connected to it before; `knownRank` is its place in the state list (0 = last).
    public var knownRank: Int?
    /// BlueZ has it as Trusted (paired and approved on this machine).
    public var trusted: Bool
    public var audioSink: Bool

    public init(address: BluetoothAddress, name: String, rssi: Int?, knownRank: Int?, trusted: Bool, audioSink: Bool) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.knownRank = knownRank
        self.trusted = trusted
        self.audioSink = audioSink
    }
}

public enum CandidateRanking {
    /// Best first; ties broken by address so the order is stable between scans.
    public static func ranked(_ candidates: [RankedCandidate]) -> [RankedCandidate] {
        candidates.sorted { lhs, rhs in
            if lhs.audioSink != rhs.audioSink { return lhs.audioSink }
            switch (lhs.knownRank, rhs.knownRank) {
            case let (left?, right?) where left != right: return left < right
            case (.some, nil): return true
            case (nil, .some): return false
            default: break
            }
            if lhs.trusted != rhs.trusted { return lhs.trusted }
            let (left, right) = (lhs.rssi ?? Int.min, rhs.rssi ?? Int.min)
            if left != right { return left > right }
            return lhs.address < rhs.address
        }
    }

    /// The candidate auto-pick connects, or nil when no audio sink was found.
    public static func autoPick(from candidates: [RankedCandidate]) -> RankedCandidate? {
        ranked(candidates).first { $0.audioSink }
    }

    /// The JSON/human report form, best first.
    public static func report(_ candidates: [RankedCandidate]) -> ScanReport {
        ScanReport(candidates: ranked(candidates).map {
            .init(address: $0.address.description, name: $0.name, rssi: $0.rssi, known: $0.knownRank != nil, audioSink: $0.audioSink)
        })
    }
}
