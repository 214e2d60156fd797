import AsyncSignals
/// What `composer-cli startup` shows: the last start-up's timeline.
///
/// JSON keys are a public contract: `operations` [{`name`, `startMs`, `endMs`, `outcome`}],
/// with times in milliseconds since the daemon started. `scenario` and `criticalPath` say
/// which graph ran and which chain of operations decided how long it took.
public struct StartupReport: Codable, Equatable, Sendable {
    public var scenario: String
    public var operations: [Operation]
    public var criticalPath: [String]
    /// Under `audio_output = auto`: what speakerd chose for the speaker and why (as in
    /// `status`); nil, and the key left out, otherwise.
    public var outputChoice: String?

    public init(scenario: String, operations: [Operation], criticalPath: [String], outputChoice: String? = nil) {
        self.scenario = scenario
        self.operations = operations
        self.criticalPath = criticalPath
        self.outputChoice = outputChoice
    }

    enum CodingKeys: String, CodingKey { case scenario, operations, criticalPath, outputChoice }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(scenario, forKey: .scenario)
        try container.encode(operations, forKey: .operations)
        try container.encode(criticalPath, forKey: .criticalPath)
        try container.encodeIfPresent(outputChoice, forKey: .outputChoice)
    }

    public struct Operation: Codable, Equatable, Sendable {
        public var name: String
        public var startMs: Double
        /// Nil (JSON null) while the operation is still running.
        public var endMs: Double?
        /// `succeeded`, `failed`, `cancelled`, `timedOut`, `skipped` or `running`.
        public var outcome: String
        /// Why it failed or was skipped (the key is left out of `--json` otherwise).
        public var reason: String?

        public init(name: String, startMs: Double, endMs: Double?, outcome: String, reason: String? = nil) {
            self.name = name
            self.startMs = startMs
            self.endMs = endMs
            self.outcome = outcome
            self.reason = reason
        }

        enum CodingKeys: String, CodingKey { case name, startMs, endMs, outcome, reason }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(startMs, forKey: .startMs)
            try container.encode(endMs, forKey: .endMs)
            try container.encode(outcome, forKey: .outcome)
            try container.encodeIfPresent(reason, forKey: .reason)
        }
    }

    /// A table, one operation per line in start order, then the critical path.
    public var humanReadable: String {
        let nameWidth = max(9, operations.map(\.name.count).max() ?? 0)
        let total = operations.compactMap(\.endMs).max() ?? 0
        var lines = ["Start-up (\(scenario)), \(Self.milliseconds(total))"]
        lines.append(padded("Operation", to: nameWidth) + "   start      end  outcome")
        for operation in operations.sorted(by: { ($0.startMs, $0.name) < ($1.startMs, $1.name) }) {
            let end = operation.endMs.map(Self.milliseconds) ?? "…"
            lines.append(padded(operation.name, to: nameWidth) + "  "
                + leftPadded(Self.milliseconds(operation.startMs), to: 6) + "  "
                + leftPadded(end, to: 7) + "  " + operation.outcome + (operation.reason.map { ": \($0)" } ?? ""))
        }
        if !criticalPath.isEmpty { lines.append("Critical path: " + criticalPath.joined(separator: " → ")) }
        if let outputChoice { lines.append("Output: auto chose \(outputChoice)") }
        return lines.joined(separator: "\n")
    }

    public static func milliseconds(_ value: Double) -> String {
        value < 10 ? "\((value * 10).rounded() / 10) ms" : "\(Int(value.rounded())) ms"
    }
}

public func leftPadded(_ text: String, to width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}
