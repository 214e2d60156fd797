@testable import AsyncSignals
import Clocks
import TestSupport
import Testing

/// The failure of the adapter-powered signal in these scenarios.
private struct AdapterError: Error, Equatable, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

private final class Payload: Sendable {}

@Suite("One-shot signal: many waiters, first result wins", .timeLimit(.minutes(1)))
struct OneShotSignalTests {
    @Test("every waiter gets the first result; later results are ignored and told they lost")
    func firstResultWins() async throws {
        let signal = OneShotSignal<String, AdapterError>()
        let waiters = (0..<50).map { _ in Task { try await signal.value() } }
        await yieldUntil("all 50 waiters are parked") { signal.waiterCount == 50 }

        #expect(signal.succeed("hci0 powered"))
        #expect(!signal.succeed("hci1 powered"))
        #expect(!signal.fail(AdapterError(reason: "rfkill")))
        for waiter in waiters { #expect(try await waiter.value == "hci0 powered") }
        #expect(signal.waiterCount == 0)
    }

    @Test("a waiter arriving after the result gets it at once")
    func lateWaiterGetsResultAtOnce() async throws {
        let signal = OneShotSignal<Int, AdapterError>()
        signal.succeed(42)
        #expect(try await signal.value() == 42)
        #expect(try await signal.value(timeout: .seconds(1)) == 42)
        #expect(signal.result == .success(42))
    }

    @Test("a failure reaches every waiter as the typed failure")
    func failureIsTyped() async {
        let signal = OneShotSignal<Int, AdapterError>()
        let waiter = Task { () async -> OneShotSignalError<AdapterError>? in
            do throws(OneShotSignalError<AdapterError>) {
                _ = try await signal.value()
                return nil
            } catch {
                return error
            }
        }
        await yieldUntil("the waiter is parked") { signal.waiterCount == 1 }
        signal.fail(AdapterError(reason: "adapter is rfkill-blocked"))
        guard case let .failed(failure)? = await waiter.value else {
            Issue.record("expected the typed failure")
            return
        }
        #expect(failure == AdapterError(reason: "adapter is rfkill-blocked"))
        #expect(signal.result.map { (try? $0.get()) == nil } == true, "the stored result is the failure")
    }

    @Test("a cancelled waiter is removed at once and the signal stays usable")
    func cancelledWaiterIsRemoved() async throws {
        let signal = OneShotSignal<Int, Never>()
        let cancelled = Task { try await signal.result() }
        let patient = Task { try await signal.result() }
        await yieldUntil("both waiters are parked") { signal.waiterCount == 2 }
        cancelled.cancel()
        await #expect(throws: SignalWaitError.cancelled) { try await cancelled.value }
        #expect(signal.waiterCount == 1, "removed at cancellation, not at resolution")
        signal.succeed(7)
        #expect(try await patient.value == .success(7))
    }

    @Test("a cancelled observer releases everything its handler captured")
    func cancelledObserverRetainsNothing() {
        let signal = OneShotSignal<Int, Never>()
        weak var weakPayload: Payload?
        let subscription: SignalSubscription
        do {
            let payload = Payload()
            weakPayload = payload
            subscription = signal.observe { _ in _ = payload }
        }
        #expect(weakPayload != nil, "held while observing")
        #expect(signal.waiterCount == 1)
        subscription.cancel()
        #expect(weakPayload == nil, "released at once on cancel")
        #expect(signal.waiterCount == 0)
    }

    @Test("an observer is called once with the result, or at once if it came earlier")
    func observersAreCalled() {
        let signal = OneShotSignal<String, Never>()
        let journal = Journal()
        signal.observe { journal.record("early \($0.get())") }
        signal.succeed("ready")
        signal.succeed("again")
        signal.observe { journal.record("late \($0.get())") }
        #expect(journal.all == ["early ready", "late ready"])
    }

    @Test("waiting times out on the injected clock and removes the waiter")
    func timesOut() async {
        let clock = TestClock()
        let signal = OneShotSignal<Int, Never>(clock: clock)
        let waiter = Task { try await signal.result(timeout: .seconds(5)) }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(5))
        await #expect(throws: SignalWaitError.timedOut(after: .seconds(5))) { try await waiter.value }
        #expect(signal.waiterCount == 0)
        #expect(SignalWaitError.timedOut(after: .seconds(5)).description == "no result arrived within 5.0 seconds")
    }

    @Test("a result before the timeout wins and leaves no timer behind")
    func resultBeatsTimeout() async throws {
        let clock = TestClock()
        let signal = OneShotSignal<Int, Never>(clock: clock)
        let waiter = Task { try await signal.result(timeout: .seconds(5)) }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(4))
        signal.succeed(1)
        #expect(try await waiter.value == .success(1))
        try await clock.checkSuspension()
    }
}
