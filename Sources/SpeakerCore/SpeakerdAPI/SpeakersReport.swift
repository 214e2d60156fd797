/// What `composer-cli speakers` shows: the known speakers, last connected first.
public struct SpeakersReport: Codable, Equatable, Sendable {
    public var speakers: [Speaker]

    public init(speakers: [Speaker]) { self.speakers = speakers }

    enum CodingKeys: String, CodingKey { case speakers }

    public struct Speaker: Codable, Equatable, Sendable {
        public var address: String
        public var name: String
        public var connected: Bool
        /// ISO 8601, UTC.
        public var lastConnected: String

        public init(address: String, name: String, connected: Bool, lastConnected: String) {
            self.address = address
            self.name = name
            self.connected = connected
            self.lastConnected = lastConnected
        }

        enum CodingKeys: String, CodingKey { case address, name, connected, lastConnected }
    }

    public var humanReadable: String {
        guard !speakers.isEmpty else { return "No known speakers yet. Find one with: composer-cli scan" }
        let nameWidth = max(4, speakers.map(\.name.count).max() ?? 0)
        var lines = ["Address            " + padded("Name", to: nameWidth) + "  Last connected"]
        for speaker in speakers {
            lines.append(speaker.address + "  " + padded(speaker.name, to: nameWidth) + "  "
                + speaker.lastConnected + (speaker.connected ? "  (connected)" : ""))
        }
        return lines.joined(separator: "\n")
    }
}
