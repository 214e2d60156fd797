/// What `composer-cli queue` shows: the song playing (or waiting) now and those queued behind it.
///
/// JSON keys are a public contract: `current` ({`file`, `state`} or null) and `queue`
/// [{`position`, `file`, `durationSeconds`}], in play order from position 1.
public struct QueueReport: Codable, Equatable, Sendable {
    public struct Current: Codable, Equatable, Sendable {
        public var file: String
        public var state: String
    }

    public struct Entry: Codable, Equatable, Sendable {
        public var position: Int
        public var file: String
        public var durationSeconds: Double
    }

    public var current: Current?
    public var queue: [Entry]

    public init(_ playback: StatusReport.Playback) {
        let active = ["waiting", "playing", "paused"].contains(playback.state)
        current = active ? playback.file.map { Current(file: $0, state: playback.state) } : nil
        queue = playback.queue.enumerated().map { Entry(position: $0.offset + 1, file: $0.element.file, durationSeconds: $0.element.durationSeconds) }
    }

    enum CodingKeys: String, CodingKey { case current, queue }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(current, forKey: .current)
        try container.encode(queue, forKey: .queue)
    }

    /// "Now: a.mid (playing)", then one numbered line per queued song with its length.
    public var humanReadable: String {
        var lines = [current.map { "Now:  \($0.file) (\($0.state))" } ?? "Now:  nothing"]
        if queue.isEmpty {
            lines.append("The queue is empty.")
        } else {
            let width = String(queue.count).count
            for entry in queue {
                lines.append(leftPadded(String(entry.position), to: width + 1) + "  " + entry.file + "  " + formatClock(entry.durationSeconds))
            }
        }
        return lines.joined(separator: "\n")
    }
}
