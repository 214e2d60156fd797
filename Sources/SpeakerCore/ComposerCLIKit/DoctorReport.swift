import SpeakerdAPI
/// What `composer-cli doctor` shows: one line per fact that decides whether speakerd can work.
public struct DoctorReport: Codable, Equatable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        case ok
        /// Works, but not the way most setups want (e.g. no config file: defaults used).
        case warning
        /// speakerd cannot do its job until this is fixed.
        case problem
    }

    public struct Check: Codable, Equatable, Sendable {
        public var name: String
        public var outcome: Outcome
        /// What was found, or what is wrong and what to do.
        public var detail: String

        public init(name: String, outcome: Outcome, detail: String) {
            self.name = name
            self.outcome = outcome
            self.detail = detail
        }

        enum CodingKeys: String, CodingKey { case name, outcome, detail }
    }

    public var checks: [Check]

    public init(checks: [Check]) { self.checks = checks }

    enum CodingKeys: String, CodingKey { case checks, healthy }

    /// True when no check found a problem (warnings allowed).
    public var healthy: Bool { !checks.contains { $0.outcome == .problem } }

    public init(from decoder: Decoder) throws {
        checks = try decoder.container(keyedBy: CodingKeys.self).decode([Check].self, forKey: .checks)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(checks, forKey: .checks)
        try container.encode(healthy, forKey: .healthy)
    }

    public var humanReadable: String {
        let nameWidth = checks.map(\.name.count).max() ?? 0
        return checks.map { check in
            let mark = switch check.outcome {
            case .ok: "ok     "
            case .warning: "warning"
            case .problem: "PROBLEM"
            }
            return "\(mark)  \(padded(check.name, to: nameWidth))  \(check.detail)"
        }.joined(separator: "\n")
    }
}
