import Clocks
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: run now or when ready", .timeLimit(.minutes(1)))
struct ReadinessGateTests {
    @Test("work registered after the level is reached runs at once, on the caller's thread")
    func runsInlineWhenReached() {
        let gate = ReadinessGate(initial: DaemonReadiness.bus)
        let journal = Journal()
        gate.runNowOrWhen(.started) { journal.record("started-block") }
        gate.runNowOrWhen(.bus) { journal.record("bus-block") }
        #expect(journal.all == ["started-block", "bus-block"])
        #expect(gate.pendingCount == 0)
    }

    @Test("work registered early waits, then runs hooks first and blocks in registration order")
    func releasesInOrderHooksFirst() {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let journal = Journal()
        gate.runNowOrWhen(.adapter) { journal.record("did 1") }
        gate.runNowOrWhenAboutToReach(.adapter) { journal.record("will 1") }
        gate.runNowOrWhen(.adapter) { journal.record("did 2") }
        gate.runNowOrWhenAboutToReach(.adapter) { journal.record("will 2") }
        gate.runNowOrWhen(.playbackReady) { journal.record("too early") }

        #expect(gate.raise(to: .bus))
        #expect(journal.all.isEmpty, "nothing waits for .bus")
        #expect(gate.raise(to: .adapter))
        #expect(journal.all == ["will 1", "will 2", "did 1", "did 2"])
        #expect(gate.pendingCount == 1)
    }

    @Test("raising past several levels releases the lower levels first")
    func raisingPastLevelsReleasesLowerFirst() {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let journal = Journal()
        gate.runNowOrWhen(.playbackReady) { journal.record("playback") }
        gate.runNowOrWhen(.bus) { journal.record("bus") }
        gate.runNowOrWhenAboutToReach(.playbackReady) { journal.record("will playback") }
        gate.runNowOrWhen(.speakerConnected) { journal.record("speaker") }
        gate.raise(to: .playbackReady)
        #expect(journal.all == ["bus", "speaker", "will playback", "playback"])
    }

    @Test("after the speaker is lost, new work waits for it to come back and runs exactly once")
    func dropAndRise() {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let journal = Journal()
        gate.runNowOrWhen(.speakerConnected) { journal.record("first connect") }
        gate.raise(to: .speakerConnected)
        #expect(journal.all == ["first connect"])

        #expect(gate.drop(to: .adapter))
        #expect(gate.level == .adapter)
        gate.runNowOrWhen(.speakerConnected) { journal.record("while lost") }
        gate.runNowOrWhen(.adapter) { journal.record("adapter still up") }
        #expect(journal.all == ["first connect", "adapter still up"])

        gate.raise(to: .speakerConnected)
        #expect(journal.all == ["first connect", "adapter still up", "while lost"])
        gate.drop(to: .bus)
        gate.raise(to: .playbackReady)
        #expect(journal.all == ["first connect", "adapter still up", "while lost"], "nothing runs twice")
    }

    @Test("raising to a level already reached and dropping to a higher one change nothing")
    func noOpChanges() {
        let gate = ReadinessGate(initial: DaemonReadiness.adapter)
        #expect(!gate.raise(to: .bus))
        #expect(!gate.raise(to: .adapter))
        #expect(!gate.drop(to: .speakerConnected))
        #expect(!gate.drop(to: .adapter))
        #expect(gate.level == .adapter)
    }

    @Test("a block registered from inside a released block runs after those already released")
    func reentrantRegistrationKeepsOrder() {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let journal = Journal()
        gate.runNowOrWhen(.bus) {
            journal.record("outer 1")
            gate.runNowOrWhen(.bus) { journal.record("nested") }
            journal.record("outer 1 done")
        }
        gate.runNowOrWhen(.bus) { journal.record("outer 2") }
        gate.raise(to: .bus)
        #expect(journal.all == ["outer 1", "outer 1 done", "outer 2", "nested"])
        gate.runNowOrWhen(.bus) { journal.record("afterwards, inline") }
        #expect(journal.all.last == "afterwards, inline")
    }

    @Test("a block may raise the gate further while it is being released")
    func raiseFromInsideABlock() {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let journal = Journal()
        gate.runNowOrWhen(.bus) {
            journal.record("bus")
            gate.raise(to: .adapter)
            journal.record("bus done")
        }
        gate.runNowOrWhen(.adapter) { journal.record("adapter") }
        gate.raise(to: .bus)
        #expect(journal.all == ["bus", "bus done", "adapter"])
        #expect(gate.level == .adapter)
    }

    @Test("levels are any Comparable type, not only the daemon's")
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
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        var levels = gate.levels().makeAsyncIterator()
        gate.raise(to: .adapter)
        gate.drop(to: .bus)
        gate.raise(to: .playbackReady)
        gate.raise(to: .bus)  // ignored: not a change
        var seen: [DaemonReadiness] = []
        for _ in 0..<4 { if let level = await next(&levels) { seen.append(level) } }
        #expect(seen == [.started, .adapter, .bus, .playbackReady])
    }

    @Test("a level stream that is abandoned is released by the gate")
    func abandonedLevelStreamIsReleased() async {
        let gate = ReadinessGate(initial: DaemonReadiness.started)
        let watcher = Task {
            for await level in gate.levels() where level == .playbackReady { return }
        }
        await yieldUntil("the watcher subscribed") { gate.changes.subscriberCount == 1 }
        watcher.cancel()
        await watcher.value
        await yieldUntil("the gate forgot the stream") { gate.changes.subscriberCount == 0 }
    }

    @Test("the daemon's levels are ordered by start-up and print their stable names")
    func daemonLevels() {
        #expect(DaemonReadiness.allCases.sorted() == [.started, .bus, .adapter, .speakerConnected, .playbackReady])
        #expect(DaemonReadiness.speakerConnected.description == "speakerConnected")
        #expect(DaemonReadiness(rawValue: "playbackReady") == .playbackReady)
    }
}
