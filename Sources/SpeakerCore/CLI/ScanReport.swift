/// What `composer-cli scan` shows: the audio devices a discovery found.
///
/// JSON keys are a public contract: `candidates` [{`address`, `name`, `rssi`, `known`,
/// `audioSink`}], best candidate first (known > trusted > strongest signal).
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
