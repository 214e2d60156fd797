import AsyncSignals
import Clocks
@testable import Readiness
import Testing

/// A running start-up switching scenarios: what has begun stays, what has not is replaced.
@Suite("Start-up sequencer: switching scenarios mid-run", .timeLimit(.minutes(1)))
struct StartupRevisionTests {
    /// Before: bus → speaker (optional), bus → soundfont (optional).
    static let before = StartupScenario("regular", steps: [
        StartupStep("config"),
        StartupStep("bus", after: ["config"]),
        StartupStep("speaker", after: ["bus"], .optional),
        StartupStep("soundfont", after: ["bus"], .optional),
    ])
    /// After: the same history, the soundfont now required, and a new last step. Listed in
    /// another order, so every operation gets a new index.
    static let after = StartupScenario("launched by request", steps: [
        StartupStep("ready", after: ["speaker", "soundfont"], .optional),
        StartupStep("soundfont", after: ["bus"], .required),
        StartupStep("speaker", after: ["bus"], .optional),
        StartupStep("bus", after: ["config"]),
        StartupStep("config"),
    ])

    /// The `before` run, started, with `config` done: its sequencer, events and result.
    func startBefore(_ ops: ScriptedOperations, clock: TestClock<Duration> = TestClock())
        throws -> (StartupSequencer, AsyncStream<StartupEvent>.Iterator, Task<StartupTimeline, Never>) {
        let sequencer = try StartupSequencer(
            scenario: Self.before, operations: ops.bodies(for: Self.before), defaultTimeout: nil, clock: clock)
        let events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        ops.end("config")
        return (sequencer, events, run)
    }

    @Test("a revision made while the bus step runs replaces the steps after it, and the timeline carries the new scenario")
    func revisionReplacesUnstartedSteps() async throws {
        let clock = TestClock()
        let ops = ScriptedOperations()
        let (sequencer, iterator, run) = try startBefore(ops, clock: clock)
        var events = iterator
        await readEvents(until: .started("bus"), from: &events)

        try await sequencer.revise(to: Self.after, operations: ops.bodies(for: Self.after), budget: .seconds(3))

        await clock.advance(by: .milliseconds(7))
        ops.end("bus")  // a body started before the revision still lands on its own step
        await readEvents(until: .started("soundfont"), from: &events)
        ops.end("speaker")
        ops.end("soundfont")
        await readEvents(until: .started("ready"), from: &events)
        ops.end("ready")

        let timeline = await run.value
        #expect(timeline.scenario == "launched by request")
        #expect(timeline.allSucceeded)
        #expect(timeline.budgetMs == 3000)
        #expect(Set(timeline.operations.map(\.name)) == ["config", "bus", "speaker", "soundfont", "ready"])
        #expect(timeline.operations.first { $0.name == "bus" }?.endMs == 7)
        #expect(timeline.operations.first { $0.name == "ready" }?.dependencies == ["speaker", "soundfont"])
    }

    @Test("the revised requirement holds: the now required soundfont failing aborts the run")
    func revisedRequirementApplies() async throws {
        let ops = ScriptedOperations()
        let (sequencer, iterator, run) = try startBefore(ops)
        var events = iterator
        await readEvents(until: .started("bus"), from: &events)
        try await sequencer.revise(to: Self.after, operations: ops.bodies(for: Self.after), budget: nil)
        ops.end("bus")
        await readEvents(until: .started("soundfont"), from: &events)
        ops.end("soundfont", .fail("no soundfont"))

        let timeline = await run.value
        #expect(timeline.abortReason?.contains("the required step 'soundfont'") == true)
        #expect(timeline.operations.first { $0.name == "speaker" }?.outcome == .cancelled)
    }

    @Test("a revision that would rewrite a step already started is refused, and the run goes on unchanged")
    func revisionCannotChangeHistory() async throws {
        let ops = ScriptedOperations()
        let (sequencer, iterator, run) = try startBefore(ops)
        var events = iterator
        ops.end("bus")
        await readEvents(until: .started("soundfont"), from: &events)  // both steps after the bus run

        await #expect(throws: StartupRevisionError.changesHistory("soundfont")) {
            try await sequencer.revise(to: Self.after, operations: ops.bodies(for: Self.after), budget: nil)
        }
        let withoutBus = StartupScenario("other", steps: [StartupStep("config")])
        await #expect(throws: StartupRevisionError.changesHistory("bus")) {
            try await sequencer.revise(to: withoutBus, operations: ops.bodies(for: withoutBus), budget: nil)
        }
        ops.end("speaker")
        ops.end("soundfont", .fail("no soundfont"))
        let timeline = await run.value
        #expect(timeline.scenario == "regular")
        #expect(timeline.abortReason == nil, "the soundfont stayed optional")
        #expect(timeline.operations.count == 4)
        await #expect(throws: StartupRevisionError.notRunning) {
            try await sequencer.revise(to: Self.after, operations: ops.bodies(for: Self.after), budget: nil)
        }
    }

    @Test("a new step whose dependencies are already done starts at once; one behind a failed step is skipped")
    func newStepsStartOrSkipAtOnce() async throws {
        let ops = ScriptedOperations()
        let (sequencer, iterator, run) = try startBefore(ops)
        var events = iterator
        ops.end("bus")
        await readEvents(until: .started("soundfont"), from: &events)
        ops.end("speaker", .fail("unreachable"))
        await readEvents(until: .finished("speaker", .failed("unreachable")), from: &events)

        let grown = StartupScenario("grown", steps: Self.before.steps + [
            StartupStep("audio", after: ["config"], .optional),
            StartupStep("ready", after: ["speaker", "soundfont"], .optional),
        ])
        try await sequencer.revise(to: grown, operations: ops.bodies(for: grown), budget: nil)
        await readEvents(until: .started("audio"), from: &events)
        ops.end("audio")
        ops.end("soundfont")

        let timeline = await run.value
        #expect(timeline.scenario == "grown")
        #expect(timeline.operations.first { $0.name == "audio" }?.outcome == .ok)
        #expect(timeline.operations.first { $0.name == "ready" }?.outcome == .skipped("speaker ended failed"))
        #expect(!ops.journal.all.contains("start ready"))
    }
}
