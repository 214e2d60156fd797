@testable import AsyncSignals
import AsyncSignals
@testable import BlueZ
import Clocks
@testable import Daemon
import Synchronization
import TestSupport
import Testing

@Suite("Reconnect controller carrying out the policy")
struct ReconnectControllerTests {
    /// Attempts that fail `failures` times, then connect; counts calls.
    final class ScriptedSpeaker: Sendable {
        let calls = Mutex(0)
        let failures: Int
        init(failures: Int) { self.failures = failures }
        func attempt() -> ReconnectController<TestClock<Duration>>.AttemptResult {
            let call = calls.withLock { $0 += 1; return $0 }
            return call <= failures ? .failed(reason: "org.bluez.Error.Failed: Page Timeout") : .connected
        }
    }

    @Test("a speaker unreachable at boot is retried on the clock until it answers")
    func retriesUntilConnected() async {
        let clock = TestClock()
        let speaker = ScriptedSpeaker(failures: 2)
        let controller = ReconnectController(
            policy: ReconnectPolicy(random: SplitMix64(seed: 7)), clock: clock) { speaker.attempt() }
        var changes = controller.changes.makeAsyncIterator()
        await controller.handle(.unreachableAtBoot)
        guard case .retryScheduled(let first) = await changes.next() else { Issue.record("no retry"); return }
        #expect(speaker.calls.withLock { $0 } == 0)
        await clock.advance(by: first)
        #expect(await changes.next() == .attempting)
        #expect(await changes.next() == .attemptFailed(reason: "org.bluez.Error.Failed: Page Timeout"))
        guard case .retryScheduled(let second) = await changes.next() else { Issue.record("no retry"); return }
        #expect(second > first)
        await clock.advance(by: second)
        #expect(await changes.next() == .attempting)
        #expect(await changes.next() == .attemptFailed(reason: "org.bluez.Error.Failed: Page Timeout"))
        guard case .retryScheduled(let third) = await changes.next() else { Issue.record("no retry"); return }
        await clock.advance(by: third)
        #expect(await changes.next() == .attempting)
        #expect(await changes.next() == .connected)
        #expect(await controller.state == .connected)
        #expect(speaker.calls.withLock { $0 } == 3)
    }

    @Test("a user's disconnect cancels the pending retry: no attempt happens later")
    func userDisconnectCancelsTimer() async {
        let clock = TestClock()
        let speaker = ScriptedSpeaker(failures: 0)
        let controller = ReconnectController(
            policy: ReconnectPolicy(random: SplitMix64(seed: 7)), clock: clock) { speaker.attempt() }
        var changes = controller.changes.makeAsyncIterator()
        await controller.handle(.unreachableAtBoot)
        _ = await changes.next()
        await controller.handle(.userDisconnected)
        #expect(await changes.next() == .holding)
        await clock.advance(by: .seconds(120))
        #expect(speaker.calls.withLock { $0 } == 0)
        #expect(await controller.state == .heldByUser)
        await controller.handle(.userAskedToConnect)
        #expect(await changes.next() == .attempting)
        #expect(await changes.next() == .connected)
    }

    @Test("an awaited attempt returns its result and a failure hands over to the backoff")
    func awaitedAttempt() async {
        let clock = TestClock()
        let speaker = ScriptedSpeaker(failures: 1)
        let controller = ReconnectController(
            policy: ReconnectPolicy(random: SplitMix64(seed: 3)), clock: clock) { speaker.attempt() }
        #expect(await controller.connectNow() == .failed(reason: "org.bluez.Error.Failed: Page Timeout"))
        guard case .waiting(.eager, attempt: 1, _) = await controller.state else {
            Issue.record("expected the eager backoff to take over, got \(await controller.state)"); return
        }
        #expect(await controller.connectNow() == .connected)
        #expect(await controller.state == .connected)
    }

    @Test("after shutdown an attempt that unwinds arms no retry, and nothing new starts: nothing is left behind a stopped daemon")
    func shutdownLeavesNothingRunning() async throws {
        let clock = TestClock()
        let calls = Mutex(0)
        let sawCancellation = OneShotSignal<Void, Never>()
        let controller = ReconnectController(
            policy: ReconnectPolicy(random: SplitMix64(seed: 5)), clock: clock) {
            calls.withLock { $0 += 1 }
            // A Connect the speaker never answers: it ends only when cancelled, as a failure.
            do { try await Task.sleep(for: .seconds(600)) } catch { _ = sawCancellation.succeed(()) }
            return .failed(reason: "cancelled")
        }
        var changes = controller.changes.makeAsyncIterator()
        await controller.handle(.unreachableAtBoot)
        guard case .retryScheduled(let delay) = await changes.next() else { Issue.record("no retry"); return }
        await clock.advance(by: delay)
        #expect(await changes.next() == .attempting)
        let stateAtShutdown = await controller.state

        await controller.shutdown()
        _ = try await sawCancellation.value(timeout: .seconds(10))
        for _ in 0..<50 { await Task.yield(); _ = await controller.state }
        // The failure that came back after shutdown moved nothing: no backoff, no timer.
        #expect(await controller.state == stateAtShutdown)
        await clock.advance(by: .seconds(3600))
        for _ in 0..<50 { await Task.yield() }
        #expect(calls.withLock { $0 } == 1, "a retry ran after shutdown")
        #expect(await controller.connectNow() == .failed(reason: "speakerd is stopping"))
        #expect(calls.withLock { $0 } == 1)
        #expect(await changes.next() == nil, "the change stream ends at shutdown")
    }
}

@Suite("Scan-and-pick ranking")
struct CandidateRankingTests {
    func candidate(_ last: String, rssi: Int?, known: Int? = nil, trusted: Bool = false, sink: Bool = true) -> RankedCandidate {
        RankedCandidate(address: try! BluetoothAddress("11:22:33:44:55:\(last)"), name: "dev \(last)",
                        rssi: rssi, knownRank: known, trusted: trusted, audioSink: sink)
    }

    @Test("known beats trusted beats strongest signal, and non-sinks come last")
    func ordering() {
        let ranked = CandidateRanking.ranked([
            candidate("01", rssi: -30),
            candidate("02", rssi: -80, trusted: true),
            candidate("03", rssi: -90, known: 1),
            candidate("04", rssi: -95, known: 0),
            candidate("05", rssi: -10, sink: false),
            candidate("06", rssi: nil),
        ])
        #expect(ranked.map(\.name) == ["dev 04", "dev 03", "dev 02", "dev 01", "dev 06", "dev 05"])
    }

    @Test("auto-pick never picks something that is not a speaker")
    func autoPickOnlySinks() {
        #expect(CandidateRanking.autoPick(from: [candidate("05", rssi: -10, sink: false)]) == nil)
        #expect(CandidateRanking.autoPick(from: [candidate("05", rssi: -10, sink: false), candidate("01", rssi: -70)])?.name == "dev 01")
    }

    @Test("the scan report marks known speakers, best first")
    func report() {
        let report = CandidateRanking.report([candidate("01", rssi: -30), candidate("04", rssi: -95, known: 0)])
        #expect(report.candidates.map(\.address) == ["11:22:33:44:55:04", "11:22:33:44:55:01"])
        #expect(report.candidates.map(\.known) == [true, false])
    }
}
