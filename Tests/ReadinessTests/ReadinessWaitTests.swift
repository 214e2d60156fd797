import Clocks
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: async callers wait for a level", .timeLimit(.minutes(1)))
struct ReadinessWaitTests {
    @Test("waiting for a level already reached returns at once")
    func alreadyReached() async throws {
        let gate = ReadinessGate(initial: Stage.ready, clock: TestClock())
        try await gate.wait(for: .connected, timeout: .seconds(30))
        #expect(gate.pendingCount == 0)
    }

    @Test("a request waiting for the ready stage is served when the level is raised")
    func resumesOnRaise() async throws {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.online, clock: clock)
        let request = Task { try await gate.wait(for: .ready, timeout: .seconds(30)) }
        await yieldUntil("the request is parked") { gate.pendingCount == 1 }
        gate.raise(to: .connected)
        #expect(gate.pendingCount == 1, "a lower level does not release it")
        gate.raise(to: .ready)
        try await request.value
        #expect(gate.pendingCount == 0)
    }

    @Test("waiting times out on the injected clock with a clear message, without sleeping")
    func timesOut() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: Stage.deviceFound, clock: clock)
        let request = Task { await waitError(gate, .ready, timeout: .seconds(30)) }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(29))
        #expect(gate.pendingCount == 1)
        await clock.advance(by: .seconds(1))
        let error = await request.value
        #expect(error == .timedOut(waitingFor: "ready", current: "deviceFound", after: .seconds(30)))
        #expect(error?.description == "gave up waiting for readiness 'ready' after 30.0 seconds (still at 'deviceFound')")
        #expect(gate.pendingCount == 0, "the timed-out waiter is gone")
    }

    @Test("a cancelled waiter is removed from the gate at once")
    func cancelledWaiterIsRemoved() async {
        let gate = ReadinessGate(initial: Stage.started, clock: TestClock())
        let request = Task { await waitError(gate, .ready) }
        await yieldUntil("the request is parked") { gate.pendingCount == 1 }
        request.cancel()
        #expect(await request.value == .cancelled(waitingFor: "ready"))
        #expect(gate.pendingCount == 0)
    }

    @Test("a waiter cancelled before it parks never parks")
    func cancelledBeforeParking() async {
        let gate = ReadinessGate(initial: Stage.started, clock: TestClock())
        let request = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await waitError(gate, .online)
        }
        #expect(await request.value == .cancelled(waitingFor: "online"))
        #expect(gate.pendingCount == 0)
    }
}

/// Waits and returns the typed error, or `nil` if the level was reached.
private func waitError(
    _ gate: ReadinessGate<Stage>, _ level: Stage, timeout: Duration? = nil
) async -> ReadinessError? {
    do throws(ReadinessError) {
        try await gate.wait(for: level, timeout: timeout)
        return nil
    } catch {
        return error
    }
}
