import AsyncSignals
import Clocks
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: polite deferred work is spaced out, not stampeded", .timeLimit(.minutes(1)))
struct PoliteBlockTests {
    @Test("polite blocks run one at a time, each after the configured spacing, in registration order")
    func spacedInRegistrationOrder() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, politeSpacing: .milliseconds(100))
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        for name in ["preload soundfont", "check audio backend", "tidy state"] {
            gate.runNowOrWhenPolitely(.ready, label: name) { ranContinuation.yield(name) }
        }
        let journal = Journal()
        gate.runNowOrWhen(.ready) { journal.record("urgent") }

        gate.raise(to: .ready)
        #expect(journal.all == ["urgent"], "urgent work runs at once; polite work waits its turn")

        await clock.untilSomeoneSleeps()
        await clock.advance(by: .milliseconds(99))
        #expect(gate.pendingCount == 3, "nothing polite runs before the spacing has passed")
        await clock.advance(by: .milliseconds(1))
        #expect(await next(&order) == "preload soundfont")

        await clock.untilSomeoneSleeps()
        #expect(gate.pendingCount == 2)
        await clock.advance(by: .milliseconds(100))
        #expect(await next(&order) == "check audio backend")
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .milliseconds(100))
        #expect(await next(&order) == "tidy state")

        await yieldUntil("the polite runner is idle") { !gate.isRunningPoliteBlocks }
        #expect(gate.pendingCount == 0)
        await #expect(throws: Never.self) { try await clock.checkSuspension() }
    }

    /// The daemon's shutdown: its soundfont preload is a polite block that holds the daemon, and
    /// under a test clock nobody moves again the runner's pause never ended (LeakSanitizer found
    /// the whole daemon left behind).
    @Test("cancelling polite blocks drops those queued and those still waiting for their level; the runner stops and lets go of them")
    func cancelledPoliteBlocks() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, politeSpacing: .milliseconds(100))
        let journal = Journal()
        final class Owner: Sendable {}
        weak var released: Owner?
        do {
            let owner = Owner()
            released = owner
            gate.runNowOrWhenPolitely(.online, label: "queued") { _ = owner; journal.record("queued ran") }
            gate.runNowOrWhenPolitely(.ready, label: "waiting for its level") { _ = owner; journal.record("waiting ran") }
        }
        gate.raise(to: .online)
        await clock.untilSomeoneSleeps()
        #expect(gate.isRunningPoliteBlocks && gate.pendingCount == 2)

        gate.cancelPoliteBlocks()
        await yieldUntil("the runner has stopped") { !gate.isRunningPoliteBlocks }
        #expect(released == nil, "a dropped block still holds what it captured")
        gate.raise(to: .ready)
        await clock.advance(by: .seconds(1))
        #expect(journal.all.isEmpty, "a cancelled polite block ran")
        #expect(gate.pendingCount == 0)
    }

    @Test("a polite block registered when the level is already reached still waits its turn")
    func politeWhenAlreadyReached() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.ready, clock: clock, politeSpacing: .seconds(1))
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        gate.runNowOrWhenPolitely(.online) { ranContinuation.yield("late polite") }
        #expect(gate.pendingCount == 1)
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(1))
        #expect(await next(&order) == "late polite")
    }

    @Test("a polite block whose level drops before its turn waits for the next rise, then runs once")
    func politeBlockWaitsAfterDrop() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.started, clock: clock, politeSpacing: .milliseconds(50))
        let journal = Journal()
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        gate.runNowOrWhenPolitely(.connected) {
            journal.record("resume playback")
            ranContinuation.yield("resume playback")
        }
        gate.raise(to: .connected)
        await clock.untilSomeoneSleeps()
        gate.drop(to: .deviceFound)  // connection lost before the polite block's turn
        await clock.advance(by: .milliseconds(50))
        await yieldUntil("the block went back to waiting") { !gate.isRunningPoliteBlocks }
        #expect(gate.pendingCount == 1)
        #expect(journal.all.isEmpty)

        gate.raise(to: .connected)
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .milliseconds(50))
        #expect(await next(&order) == "resume playback")
        await clock.run()
        #expect(journal.all == ["resume playback"])
    }
}
