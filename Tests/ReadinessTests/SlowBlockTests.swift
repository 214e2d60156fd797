@testable import AsyncSignals
import AsyncSignals
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: slow blocks are named in the log", .timeLimit(.minutes(1)))
struct SlowBlockTests {
    @Test("a block slower than 10 ms on the injected clock is logged with its label")
    func slowBlockIsLogged() {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, logger: logs.logger())
        gate.runNowOrWhen(.online, label: "load the soundfont") { clock.step(by: .milliseconds(25)) }
        gate.runNowOrWhen(.online, label: "quick") { clock.step(by: .milliseconds(2)) }
        gate.raise(to: .online)

        #expect(logs.warnings.count == 1)
        let warning = logs.warnings.first
        #expect(warning?.message.contains("load the soundfont") == true)
        #expect(warning?.message.contains("25.0 ms") == true)
        #expect(warning?.metadata["label"] == "load the soundfont")
    }

    @Test("a block exactly at the threshold is not reported")
    func thresholdIsExclusive() {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.online, clock: clock, logger: logs.logger())
        gate.runNowOrWhen(.online, label: "borderline") { clock.step(by: .milliseconds(10)) }
        #expect(logs.warnings.isEmpty)
    }

    @Test("without a label, the warning names the registering file and line")
    func defaultLabelIsSourceLocation() {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.online, clock: clock, logger: logs.logger())
        let line = #line + 1
        gate.runNowOrWhen(.online) { clock.step(by: .milliseconds(11)) }
        #expect(logs.warnings.first?.metadata["label"] == "ReadinessTests/SlowBlockTests.swift:\(line)")
    }

    @Test("slow will-reach hooks are reported too")
    func slowHookIsLogged() {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, logger: logs.logger())
        gate.runNowOrWhenAboutToReach(.deviceFound, label: "publish device name") { clock.step(by: .milliseconds(40)) }
        gate.raise(to: .ready)
        #expect(logs.warnings.map { $0.metadata["label"] } == ["publish device name"])
    }

    @Test("a slow polite block is named in the log too")
    func slowPoliteBlockIsLogged() async {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, logger: logs.logger())
        let done = OneShotSignal<Void, Never>()
        gate.runNowOrWhenPolitely(.ready, label: "preload soundfont") {
            clock.step(by: .milliseconds(120))
            done.succeed(())
        }
        gate.raise(to: .ready)
        _ = try? await done.result()
        await yieldUntil("the polite runner finished") { !gate.isRunningPoliteBlocks }
        #expect(logs.warnings.map { $0.metadata["label"] } == ["preload soundfont"])
        #expect(logs.warnings.first?.message.contains("120.0 ms") == true)
    }

    @Test("work expected to take a while is judged against its own budget, not the quick-block threshold")
    func politeBlockWithinItsBudgetIsQuiet() async {
        let clock = SteppingClock()
        let logs = LogCapture()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, logger: logs.logger())
        let done = OneShotSignal<Void, Never>()
        gate.runNowOrWhenPolitely(.online, label: "preload soundfont", budget: .seconds(10)) {
            clock.step(by: .milliseconds(400))
        }
        gate.runNowOrWhenPolitely(.online, label: "index the library", budget: .milliseconds(100)) {
            clock.step(by: .milliseconds(250))
            done.succeed(())
        }
        gate.raise(to: .online)
        _ = try? await done.result()
        await yieldUntil("the polite runner finished") { !gate.isRunningPoliteBlocks }
        #expect(logs.warnings.map { $0.metadata["label"] } == ["index the library"], "400 ms is within a 10 s budget")
        #expect(logs.warnings.first?.message.contains("(threshold 100.0 ms)") == true, "\(logs.warnings.map(\.message))")
    }
}
