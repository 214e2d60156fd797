/// What `composer-cli scan` shows: the devices a discovery found, audio sinks first.
///
/// JSON keys are a public contract: `candidates` [{`address`, `name`, `rssi`, `known`,
/// `audioSink`}], best candidate first (known > trusted > strongest signal). speakerd reports
/// every device it heard; `scan` lists those with `audioSink` false (a phone) only with `--all`.
public struct ScanReport: Codable, Equatable, Sendable {
    public var candidates: [Candidate]

    public init(candidates: [Candidate]) { self.candidates = candidates }

    enum CodingKeys: String, CodingKey { case candidates }

    public struct Candidate: Codable, Equatable, Sendable {
        public var address: String
        public var name: String
        /// Signal strength in dBm; nil (JSON null) when the device was not heard this scan.
        public var rssi: Int?
        /// speakerd has connected to it before.
        public var known: Bool
        /// It advertises the A2DP sink role, so it can play our audio.
        public var audioSink: Bool

        public init(address: String, name: String, rssi: Int?, known: Bool, audioSink: Bool) {
            self.address = address
            self.name = name
            self.rssi = rssi
            self.known = known
            self.audioSink = audioSink
        }

        enum CodingKeys: String, CodingKey { case address, name, rssi, known, audioSink }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(address, forKey: .address)
            try container.encode(name, forKey: .name)
            try container.encode(rssi, forKey: .rssi)
            try container.encode(known, forKey: .known)
            try container.encode(audioSink, forKey: .audioSink)
        }
    }

    /// What `scan` lists: every device with `all`, otherwise the audio sinks only.
    public func listed(all: Bool) -> ScanReport {
        all ? self : ScanReport(candidates: candidates.filter(\.audioSink))
    }

    /// The table of what `scan` lists, and how many other devices it left out and how to see them.
    public func humanReadable(all: Bool) -> String {
        let listed = listed(all: all)
        let hidden = candidates.count - listed.candidates.count
        guard hidden > 0 else { return listed.humanReadable }
        if listed.candidates.isEmpty { return listed.humanReadable + " " + Self.otherDevicesNote(hidden) }
        return listed.humanReadable + "\n(\(hidden) not shown: --all)"
    }

    /// Why an empty list of speakers is not all the scan heard.
    public static func otherDevicesNote(_ hidden: Int) -> String {
        "(\(hidden) other device\(hidden == 1 ? "" : "s") found; --all lists \(hidden == 1 ? "it" : "them"))"
    }

    public var humanReadable: String {
        guard !candidates.isEmpty else {
            return "No speakers found. Is the speaker on and in pairing mode?"
        }
        let nameWidth = max(4, candidates.map(\.name.count).max() ?? 0)
        var lines = ["Address            " + padded("Name", to: nameWidth) + "  Signal    Notes"]
        for candidate in candidates {
            var notes: [String] = []
            if candidate.known { notes.append("known") }
            if !candidate.audioSink { notes.append("not a speaker") }
            let signal = candidate.rssi.map { "\($0) dBm" } ?? "—"
            lines.append(candidate.address + "  " + padded(candidate.name, to: nameWidth) + "  "
                + padded(signal, to: 8) + "  " + notes.joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }
}
