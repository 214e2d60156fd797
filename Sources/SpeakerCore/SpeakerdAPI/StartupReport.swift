import AsyncSignals
/// What `composer-cli startup` shows: the last start-up's timeline.
///
/// JSON keys are a public contract: `operations` [{`name`, `startMs`, `endMs`, `outcome`}],
/// with times in milliseconds since that run started (the first run starts with the daemon; a
/// later run's `startedAfterMs` says when it began). `scenario` and `criticalPath` say
/// which graph ran and which chain of operations decided how long it took.
public struct StartupReport: Codable, Equatable, Sendable {
    public var scenario: String
    public var operations: [Operation]
    public var criticalPath: [String]
    /// Under `audio_output = auto`: what speakerd chose for the speaker and why (as in
    /// `status`); nil, and the key left out, otherwise.
    public var outputChoice: String?
    /// Which start-up of this speakerd this is: 1 at boot; start-up runs again when what
    /// stopped it clears (bluetoothd back, an adapter plugged in).
    public var run: Int
    /// When this run began, in ms since speakerd started (0 at boot).
    public var startedAfterMs: Double
    /// Why this run happened ("bluetoothd is back"); nil (key left out) at boot.
    public var reason: String?
    /// The boot's run, kept beside a later one so `startup` can show both; empty at boot.
    /// (An array only because a struct cannot hold an optional of itself; at most one.)
    private var boot: [StartupReport]

    /// The boot's start-up, when this report is of a later run (JSON key `bootRun`).
    public var bootRun: StartupReport? {
        get { boot.first }
        set { boot = newValue.map { [$0] } ?? [] }
    }

    public init(scenario: String, operations: [Operation], criticalPath: [String], outputChoice: String? = nil,
                run: Int = 1, startedAfterMs: Double = 0, reason: String? = nil, bootRun: StartupReport? = nil) {
        self.scenario = scenario
        self.operations = operations
        self.criticalPath = criticalPath
        self.outputChoice = outputChoice
        self.run = run
        self.startedAfterMs = startedAfterMs
        self.reason = reason
        self.boot = bootRun.map { [$0] } ?? []
    }

    enum CodingKeys: String, CodingKey { case scenario, operations, criticalPath, outputChoice, run, startedAfterMs, reason, bootRun }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(scenario: try container.decode(String.self, forKey: .scenario),
                  operations: try container.decode([Operation].self, forKey: .operations),
                  criticalPath: try container.decode([String].self, forKey: .criticalPath),
                  outputChoice: try container.decodeIfPresent(String.self, forKey: .outputChoice),
                  run: try container.decodeIfPresent(Int.self, forKey: .run) ?? 1,
                  startedAfterMs: try container.decodeIfPresent(Double.self, forKey: .startedAfterMs) ?? 0,
                  reason: try container.decodeIfPresent(String.self, forKey: .reason),
                  bootRun: try container.decodeIfPresent(StartupReport.self, forKey: .bootRun))
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(scenario, forKey: .scenario)
        try container.encode(operations, forKey: .operations)
        try container.encode(criticalPath, forKey: .criticalPath)
        try container.encodeIfPresent(outputChoice, forKey: .outputChoice)
        try container.encode(run, forKey: .run)
        try container.encode(startedAfterMs, forKey: .startedAfterMs)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(bootRun, forKey: .bootRun)
    }

    /// The heading of this run when it is shown beside the boot's: "Start-up run 2, 5 min 12 s
    /// after speakerd started (bluetoothd is back)".
    public var runHeading: String {
        guard run > 1 else { return "Start-up at boot" }
        return "Start-up run \(run), \(Self.elapsed(startedAfterMs)) after speakerd started" + (reason.map { " (\($0))" } ?? "")
    }

    /// A time since speakerd started, as a person reads it: "850 ms", "42 s", "5 min 12 s", "3 h 4 min".
    public static func elapsed(_ ms: Double) -> String {
        let seconds = Int(ms / 1000)
        if seconds < 1 { return milliseconds(ms) }
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \((seconds % 3600) / 60) min"
    }

    public struct Operation: Codable, Equatable, Sendable {
        public var name: String
        public var startMs: Double
        /// Nil (JSON null) while the operation is still running.
        public var endMs: Double?
        /// `ok`, `failed`, `cancelled`, `timedOut` or `skipped` (`OperationOutcome.kind`).
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

    /// The boot's table, then this run's, each under its heading, when this is a later run;
    /// otherwise this run's table alone.
    public var humanReadableWithBoot: String {
        guard let bootRun else { return humanReadable }
        return bootRun.runHeading + ":\n" + bootRun.humanReadable + "\n\n" + runHeading + ":\n" + humanReadable
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
