import AsyncSignals
import Clocks
import Foundation
@testable import Readiness
import TestSupport
import Testing

@Suite("Start-up sequencer: running the graph", .timeLimit(.minutes(1)))
struct StartupSequencerTests {
    @Test("each operation starts the moment its last dependency finishes, and the timeline shows it")
    func maximumParallelism() async throws {
        let clock = TestClock()
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer(
            scenario: Scenarios.regular, operations: ops.bodies(for: Scenarios.regular),
            defaultTimeout: nil, clock: clock
        )
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }

        await readEvents(until: .started("load config"), from: &events)
        await clock.advance(by: .milliseconds(5))
        ops.end("load config")
        // Both of its dependents start at once.
        let wave1 = await readEvents(until: .started("preload soundfont"), from: &events)
        #expect(wave1.contains(.started("connect bus")))
        await clock.advance(by: .milliseconds(10))
        ops.end("connect bus")
        let wave2 = await readEvents(until: .started("check audio backend"), from: &events)
        #expect(wave2.contains(.started("find BlueZ")))
        await clock.advance(by: .milliseconds(20))
        ops.end("find BlueZ")
        await readEvents(until: .started("power adapter"), from: &events)
        ops.end("check audio backend")
        await clock.advance(by: .milliseconds(30))
        ops.end("power adapter")
        await readEvents(until: .started("connect last speaker"), from: &events)
        await clock.advance(by: .milliseconds(400))
        ops.end("connect last speaker")
        await readEvents(until: .finished("connect last speaker", .ok), from: &events)
        #expect(!ops.journal.all.contains("start playback ready"), "still waiting for the soundfont")
        await clock.advance(by: .milliseconds(100))
        ops.end("preload soundfont")
        await readEvents(until: .started("playback ready"), from: &events)
        ops.end("playback ready")

        let timeline = await run.value
        #expect(timeline.abortReason == nil)
        #expect(timeline.allSucceeded)
        let startMs = Dictionary(uniqueKeysWithValues: timeline.operations.map { ($0.name, $0.startMs) })
        let endMs = Dictionary(uniqueKeysWithValues: timeline.operations.map { ($0.name, $0.endMs) })
        #expect(startMs["connect bus"] == 5 && startMs["preload soundfont"] == 5)
        #expect(startMs["find BlueZ"] == 15 && startMs["check audio backend"] == 15)
        #expect(startMs["power adapter"] == 35)
        #expect(startMs["connect last speaker"] == 65 && endMs["connect last speaker"] == 465)
        #expect(startMs["playback ready"] == 565, "waited for the soundfont, which ended last")
        #expect(timeline.totalMs == 565)
        #expect(timeline.criticalPath == ["load config", "preload soundfont", "playback ready"])
    }

    @Test("an optional failure skips only the operations that depend on it")
    func optionalFailureSkipsDependents() async throws {
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer("optional", operations: [
            StartupOperation("load config", run: ops.body("load config")),
            StartupOperation("preload soundfont", after: ["load config"], .optional, run: ops.body("preload soundfont")),
            StartupOperation("warm up synth", after: ["preload soundfont"], run: ops.body("warm up synth")),
            StartupOperation("connect bus", after: ["load config"], run: ops.body("connect bus")),
        ], defaultTimeout: nil, clock: TestClock())
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        ops.end("load config")
        await readEvents(until: .started("connect bus"), from: &events)
        ops.end("preload soundfont", .fail("soundfont file is missing"))
        ops.end("connect bus")
        let timeline = await run.value
        #expect(timeline.abortReason == nil)
        #expect(timeline.entry("preload soundfont")?.outcome == .failed("soundfont file is missing"))
        #expect(timeline.entry("warm up synth")?.outcome == .skipped("preload soundfont ended failed"))
        #expect(timeline.entry("connect bus")?.outcome == .ok)
        #expect(!ops.journal.all.contains("start warm up synth"))
    }

    @Test("a required failure aborts: running work is cancelled, the rest never starts, the reason is kept")
    func requiredFailureAborts() async throws {
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer(
            scenario: Scenarios.regular, operations: ops.bodies(for: Scenarios.regular),
            defaultTimeout: nil, clock: TestClock(), logger: LogCapture().logger()
        )
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        ops.end("load config")
        await readEvents(until: .started("preload soundfont"), from: &events)
        ops.end("connect bus", .fail("no system bus at /run/dbus/system_bus_socket"))
        let timeline = await run.value
        #expect(timeline.abortReason == "the required step 'connect bus' failed: no system bus at /run/dbus/system_bus_socket")
        #expect(timeline.entry("preload soundfont")?.outcome == .cancelled)
        #expect(timeline.entry("find BlueZ")?.outcome == .cancelled)
        #expect(timeline.entry("playback ready")?.outcome == .cancelled)
        await yieldUntil("the running soundfont load saw its cancellation") {
            ops.journal.all.contains("cancelled preload soundfont")
        }
        #expect(!ops.journal.all.contains("start find BlueZ"))
    }

    @Test("an operation can abort the whole sequence, like a missing adapter")
    func operationAbortsSequence() async throws {
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer(
            scenario: Scenarios.regular, operations: ops.bodies(for: Scenarios.regular),
            defaultTimeout: nil, clock: TestClock(), logger: LogCapture().logger()
        )
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        ops.end("load config")
        await readEvents(until: .started("connect bus"), from: &events)
        ops.end("connect bus")
        await readEvents(until: .started("find BlueZ"), from: &events)
        ops.end("find BlueZ", .abort("BlueZ is not running: start bluetooth.service"))
        let seen = await readEvents(until: .aborted(reason: "BlueZ is not running: start bluetooth.service"), from: &events)
        #expect(seen.contains(.finished("find BlueZ", .failed("aborted start-up: BlueZ is not running: start bluetooth.service"))))
        let timeline = await run.value
        #expect(timeline.abortReason == "BlueZ is not running: start bluetooth.service")
        #expect(timeline.entry("power adapter")?.outcome == .cancelled)
        #expect(timeline.entry("check audio backend")?.outcome == .cancelled, "running work was cancelled")
    }

    @Test("an operation that hangs times out on the injected clock and its dependents are skipped")
    func perOperationTimeout() async throws {
        let clock = TestClock()
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer("timeouts", operations: [
            StartupOperation("connect last speaker", .optional, timeout: .seconds(8), run: ops.body("connect last speaker")),
            StartupOperation("announce speaker", after: ["connect last speaker"], run: ops.body("announce speaker")),
            StartupOperation("load config", run: ops.body("load config")),
        ], defaultTimeout: .seconds(10), clock: clock, logger: LogCapture().logger())
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        ops.end("load config")
        await clock.untilSomeoneSleeps()  // the shared deadline timer (bodies do not sleep)
        await clock.advance(by: .seconds(8))
        let timeline = await run.value
        #expect(timeline.entry("connect last speaker")?.outcome == .timedOut)
        #expect(timeline.entry("connect last speaker")?.endMs == 8_000)
        #expect(timeline.entry("announce speaker")?.outcome == .skipped("connect last speaker ended timedOut"))
        #expect(timeline.abortReason == nil)
        await yieldUntil("the hung work was cancelled") { ops.journal.all.contains("cancelled connect last speaker") }
    }

    @Test("a start-up over its budget is reported while it runs and in the timeline")
    func budgetExceeded() async throws {
        let clock = TestClock()
        let ops = ScriptedOperations()
        let logs = LogCapture()
        let sequencer = try StartupSequencer("slow", operations: [
            StartupOperation("load config", run: ops.body("load config")),
            StartupOperation("connect last speaker", after: ["load config"], run: ops.body("connect last speaker")),
        ], defaultTimeout: nil, budget: .seconds(3), clock: clock, logger: logs.logger())
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        ops.end("load config")
        await readEvents(until: .started("connect last speaker"), from: &events)
        await clock.untilSomeoneSleeps()  // the budget timer
        await clock.advance(by: .seconds(3))
        await readEvents(until: .budgetExceeded(budget: .seconds(3), unfinished: ["connect last speaker"]), from: &events)
        #expect(logs.warnings.contains { $0.message.contains("exceeded its 3.0 seconds budget") })
        ops.end("connect last speaker")
        let timeline = await run.value
        #expect(timeline.budgetExceeded)
        #expect(timeline.budgetMs == 3_000)
    }

    @Test("a start-up within its budget is not flagged and leaves no timer behind")
    func withinBudget() async throws {
        let clock = TestClock()
        let sequencer = try StartupSequencer("fast", operations: [
            StartupOperation("load config") { _ in }
        ], budget: .seconds(3), clock: clock)
        let timeline = await sequencer.run()
        #expect(!timeline.budgetExceeded)
        #expect(await sequencer.run() == timeline, "running again returns the same timeline")
        try await clock.checkSuspension()
    }

    @Test("cancelling the start-up aborts it and still yields a timeline")
    func cancellingRunAborts() async throws {
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer(
            scenario: Scenarios.firstRun, operations: ops.bodies(for: Scenarios.firstRun),
            defaultTimeout: nil, clock: TestClock(), logger: LogCapture().logger()
        )
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        run.cancel()
        let timeline = await run.value
        #expect(timeline.abortReason == "start-up was cancelled")
        #expect(timeline.operations.allSatisfy { $0.outcome == .cancelled })
    }

    @Test("the timeline prints the stable JSON keys composer-cli startup --json promises")
    func timelineJSON() async throws {
        let sequencer = try StartupSequencer("json", operations: [
            StartupOperation("load config") { _ in },
            StartupOperation("connect bus", after: ["load config"]) { _ in throw StartupAbort("no bus") },
        ], clock: TestClock(), logger: LogCapture().logger())
        let timeline = await sequencer.run()
        let data = try JSONEncoder().encode(timeline)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let operations = try #require(object["operations"] as? [[String: Any]])
        #expect(operations.count == 2)
        for operation in operations {
            #expect(Set(operation.keys).isSuperset(of: ["name", "startMs", "endMs", "outcome"]))
        }
        #expect(operations[0]["outcome"] as? String == "ok")
        #expect(operations[1]["outcome"] as? String == "failed")
        #expect(operations[1]["reason"] as? String == "aborted start-up: no bus")
        #expect(object["abortReason"] as? String == "no bus")
        #expect(object["criticalPath"] as? [String] == ["load config", "connect bus"])
        #expect(try JSONDecoder().decode(StartupTimeline.self, from: data) == timeline)
    }

    @Test("a chain of 2,000 operations runs in order without exhausting the stack")
    func longChain() async throws {
        let journal = Journal()
        let operations = (0..<2_000).map { index in
            StartupOperation("op \(index)", after: index == 0 ? [] : ["op \(index - 1)"]) { _ in
                journal.record("\(index)")
            }
        }
        let timeline = try await StartupSequencer("chain", operations: operations, clock: TestClock()).run()
        #expect(timeline.allSucceeded)
        #expect(journal.all == (0..<2_000).map { "\($0)" })
        #expect(timeline.criticalPath.count == 2_000)
    }

    @Test("a shorter timeout declared later still fires first, then the longer one")
    func timeoutsShareOneTimer() async throws {
        let clock = TestClock()
        let ops = ScriptedOperations()
        let sequencer = try StartupSequencer("two timeouts", operations: [
            StartupOperation("connect last speaker", .optional, timeout: .seconds(10), run: ops.body("connect last speaker")),
            StartupOperation("check audio backend", .optional, timeout: .seconds(2), run: ops.body("check audio backend")),
        ], clock: clock, logger: LogCapture().logger())
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("check audio backend"), from: &events)
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(2))
        await readEvents(until: .finished("check audio backend", .timedOut), from: &events)
        #expect(!ops.journal.all.contains("cancelled connect last speaker"))
        await clock.untilSomeoneSleeps()  // the timer, re-armed for the longer deadline
        await clock.advance(by: .seconds(8))
        let timeline = await run.value
        #expect(timeline.entry("check audio backend")?.endMs == 2_000)
        #expect(timeline.entry("connect last speaker")?.endMs == 10_000)
        #expect(timeline.entry("connect last speaker")?.outcome == .timedOut)
        try await clock.checkSuspension()
    }

    @Test("the unattended budget is 3 seconds")
    func unattendedBudget() {
        #expect(StartupSequencer.unattendedBudget == .seconds(3))
    }

    @Test("SIGTERM during start-up: cancel(reason:) aborts the sequence and keeps the reason")
    func cancelWithReason() async throws {
        let ops = ScriptedOperations()
        let logs = LogCapture()
        let sequencer = try StartupSequencer(
            scenario: Scenarios.regular, operations: ops.bodies(for: Scenarios.regular),
            defaultTimeout: nil, clock: TestClock(), logger: logs.logger()
        )
        var events = sequencer.events().makeAsyncIterator()
        let run = Task { await sequencer.run() }
        await readEvents(until: .started("load config"), from: &events)
        await sequencer.cancel(reason: "speakerd is stopping (SIGTERM)")
        let timeline = await run.value
        #expect(timeline.abortReason == "speakerd is stopping (SIGTERM)")
        #expect(timeline.entry("load config")?.outcome == .cancelled)
        #expect(logs.all.contains { $0.level == .error && $0.message == "start-up aborted: speakerd is stopping (SIGTERM)" })
        #expect(await sequencer.timeline == timeline)
    }
}
