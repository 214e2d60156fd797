import Clocks
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: run now or when ready", .timeLimit(.minutes(1)))
struct ReadinessGateTests {
    @Test("work registered after the level is reached runs at once, on the caller's thread")
    func runsInlineWhenReached() {
        let gate = ReadinessGate(initial: Stage.online)
        let journal = Journal()
        gate.runNowOrWhen(.started) { journal.record("started-block") }
        gate.runNowOrWhen(.online) { journal.record("online-block") }
        #expect(journal.all == ["started-block", "online-block"])
        #expect(gate.pendingCount == 0)
    }

    @Test("work registered early waits, then runs hooks first and blocks in registration order")
    func releasesInOrderHooksFirst() {
        let gate = ReadinessGate(initial: Stage.started)
        let journal = Journal()
        gate.runNowOrWhen(.deviceFound) { journal.record("did 1") }
        gate.runNowOrWhenAboutToReach(.deviceFound) { journal.record("will 1") }
        gate.runNowOrWhen(.deviceFound) { journal.record("did 2") }
        gate.runNowOrWhenAboutToReach(.deviceFound) { journal.record("will 2") }
        gate.runNowOrWhen(.ready) { journal.record("too early") }

        #expect(gate.raise(to: .online))
        #expect(journal.all.isEmpty, "nothing waits for .online")
        #expect(gate.raise(to: .deviceFound))
        #expect(journal.all == ["will 1", "will 2", "did 1", "did 2"])
        #expect(gate.pendingCount == 1)
    }

    @Test("raising past several levels releases the lower levels first")
    func raisingPastLevelsReleasesLowerFirst() {
        let gate = ReadinessGate(initial: Stage.started)
        let journal = Journal()
        gate.runNowOrWhen(.ready) { journal.record("ready") }
        gate.runNowOrWhen(.online) { journal.record("online") }
        gate.runNowOrWhenAboutToReach(.ready) { journal.record("will ready") }
        gate.runNowOrWhen(.connected) { journal.record("connected") }
        gate.raise(to: .ready)
        #expect(journal.all == ["online", "connected", "will ready", "ready"])
    }

    @Test("after the connection is lost, new work waits for it to come back and runs exactly once")
    func dropAndRise() {
        let gate = ReadinessGate(initial: Stage.started)
        let journal = Journal()
        gate.runNowOrWhen(.connected) { journal.record("first connect") }
        gate.raise(to: .connected)
        #expect(journal.all == ["first connect"])

        #expect(gate.drop(to: .deviceFound))
        #expect(gate.level == .deviceFound)
        gate.runNowOrWhen(.connected) { journal.record("while lost") }
        gate.runNowOrWhen(.deviceFound) { journal.record("device still found") }
        #expect(journal.all == ["first connect", "device still found"])

        gate.raise(to: .connected)
        #expect(journal.all == ["first connect", "device still found", "while lost"])
        gate.drop(to: .online)
        gate.raise(to: .ready)
        #expect(journal.all == ["first connect", "device still found", "while lost"], "nothing runs twice")
    }

    @Test("raising to a level already reached and dropping to a higher one change nothing")
    func noOpChanges() {
        let gate = ReadinessGate(initial: Stage.deviceFound)
        #expect(!gate.raise(to: .online))
        #expect(!gate.raise(to: .deviceFound))
        #expect(!gate.drop(to: .connected))
        #expect(!gate.drop(to: .deviceFound))
        #expect(gate.level == .deviceFound)
    }

    @Test("a block registered from inside a released block runs after those already released")
    func reentrantRegistrationKeepsOrder() {
        let gate = ReadinessGate(initial: Stage.started)
        let journal = Journal()
        gate.runNowOrWhen(.online) {
            journal.record("outer 1")
            gate.runNowOrWhen(.online) { journal.record("nested") }
            journal.record("outer 1 done")
        }
        gate.runNowOrWhen(.online) { journal.record("outer 2") }
        gate.raise(to: .online)
        #expect(journal.all == ["outer 1", "outer 1 done", "outer 2", "nested"])
        gate.runNowOrWhen(.online) { journal.record("afterwards, inline") }
        #expect(journal.all.last == "afterwards, inline")
    }

    @Test("a block may raise the gate further while it is being released")
    func raiseFromInsideABlock() {
        let gate = ReadinessGate(initial: Stage.started)
        let journal = Journal()
        gate.runNowOrWhen(.online) {
            journal.record("online")
            gate.raise(to: .deviceFound)
            journal.record("online done")
        }
        gate.runNowOrWhen(.deviceFound) { journal.record("device found") }
        gate.raise(to: .online)
        #expect(journal.all == ["online", "online done", "device found"])
        #expect(gate.level == .deviceFound)
    }

    @Test("levels are any Comparable type, not only an enum of named stages")
    func genericLevels() {
        let gate = ReadinessGate(initial: 0)
        let journal = Journal()
        gate.runNowOrWhen(7) { journal.record("seven") }
        gate.raise(to: 6)
        #expect(journal.all.isEmpty)
        gate.raise(to: 70)
        #expect(journal.all == ["seven"])
    }

    @Test("the level stream starts with the current level and reports every raise and drop")
    func levelStream() async {
        let gate = ReadinessGate(initial: Stage.started)
        var levels = gate.levels().makeAsyncIterator()
        gate.raise(to: .deviceFound)
        gate.drop(to: .online)
        gate.raise(to: .ready)
        gate.raise(to: .online)  // ignored: not a change
        var seen: [Stage] = []
        for _ in 0..<4 { if let level = await next(&levels) { seen.append(level) } }
        #expect(seen == [.started, .deviceFound, .online, .ready])
    }

    @Test("a level stream that is abandoned is released by the gate")
    func abandonedLevelStreamIsReleased() async {
        let gate = ReadinessGate(initial: Stage.started)
        let watcher = Task {
            for await level in gate.levels() where level == .ready { return }
        }
        await yieldUntil("the watcher subscribed") { gate.changes.subscriberCount == 1 }
        watcher.cancel()
        await watcher.value
        await yieldUntil("the gate forgot the stream") { gate.changes.subscriberCount == 0 }
    }
}
