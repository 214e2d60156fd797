import AsyncSignals
import Clocks
@testable import Readiness
@testable import Daemon
import TestSupport
import Testing

@Suite("Readiness gate: polite deferred work is spaced out, not stampeded", .timeLimit(.minutes(1)))
struct PoliteBlockTests {
    @Test("polite blocks run one at a time, each after the configured spacing, in registration order")
    func spacedInRegistrationOrder() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: DaemonReadiness.started, clock: clock, politeSpacing: .milliseconds(100))
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        for name in ["preload soundfont", "check audio backend", "tidy state"] {
            gate.runNowOrWhenPolitely(.playbackReady, label: name) { ranContinuation.yield(name) }
        }
        let journal = Journal()
        gate.runNowOrWhen(.playbackReady) { journal.record("urgent") }

        gate.raise(to: .playbackReady)
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

    @Test("a polite block registered when the level is already reached still waits its turn")
    func politeWhenAlreadyReached() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: DaemonReadiness.playbackReady, clock: clock, politeSpacing: .seconds(1))
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        gate.runNowOrWhenPolitely(.bus) { ranContinuation.yield("late polite") }
        #expect(gate.pendingCount == 1)
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(1))
        #expect(await next(&order) == "late polite")
    }

    @Test("a polite block whose level drops before its turn waits for the next rise, then runs once")
    func politeBlockWaitsAfterDrop() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: DaemonReadiness.started, clock: clock, politeSpacing: .milliseconds(50))
        let journal = Journal()
        let (ran, ranContinuation) = AsyncStream.makeStream(of: String.self)
        var order = ran.makeAsyncIterator()
        gate.runNowOrWhenPolitely(.speakerConnected) {
            journal.record("resume playback")
            ranContinuation.yield("resume playback")
        }
        gate.raise(to: .speakerConnected)
        await clock.untilSomeoneSleeps()
        gate.drop(to: .adapter)  // speaker lost before the polite block's turn
        await clock.advance(by: .milliseconds(50))
        await yieldUntil("the block went back to waiting") { !gate.isRunningPoliteBlocks }
        #expect(gate.pendingCount == 1)
        #expect(journal.all.isEmpty)

        gate.raise(to: .speakerConnected)
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .milliseconds(50))
        #expect(await next(&order) == "resume playback")
        await clock.run()
        #expect(journal.all == ["resume playback"])
    }
}
