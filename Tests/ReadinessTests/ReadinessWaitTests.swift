import Clocks
@testable import Readiness
import TestSupport
import Testing

@Suite("Readiness gate: async callers wait for a level", .timeLimit(.minutes(1)))
struct ReadinessWaitTests {
    @Test("waiting for a level already reached returns at once")
    func alreadyReached() async throws {
        let gate = ReadinessGate(initial: DaemonReadiness.playbackReady, clock: TestClock())
        try await gate.wait(for: .speakerConnected, timeout: .seconds(30))
        #expect(gate.pendingCount == 0)
    }

    @Test("a play request waiting for playback readiness is served when the level is raised")
    func resumesOnRaise() async throws {
        let clock = TestClock()
        let gate = ReadinessGate(initial: DaemonReadiness.bus, clock: clock)
        let request = Task { try await gate.wait(for: .playbackReady, timeout: .seconds(30)) }
        await yieldUntil("the request is parked") { gate.pendingCount == 1 }
        gate.raise(to: .speakerConnected)
        #expect(gate.pendingCount == 1, "a lower level does not release it")
        gate.raise(to: .playbackReady)
        try await request.value
        #expect(gate.pendingCount == 0)
    }

    @Test("waiting times out on the injected clock with a clear message, without sleeping")
    func timesOut() async {
        let clock = TestClock()
        let gate = ReadinessGate(initial: DaemonReadiness.adapter, clock: clock)
        let request = Task { await waitError(gate, .playbackReady, timeout: .seconds(30)) }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(29))
        #expect(gate.pendingCount == 1)
        await clock.advance(by: .seconds(1))
        let error = await request.value
        #expect(error == .timedOut(waitingFor: "playbackReady", current: "adapter", after: .seconds(30)))
        #expect(error?.description == "gave up waiting for readiness 'playbackReady' after 30.0 seconds (still at 'adapter')")
        #expect(gate.pendingCount == 0, "the timed-out waiter is gone")
    }

    @Test("a cancelled waiter is removed from the gate at once")
    func cancelledWaiterIsRemoved() async {
        let gate = ReadinessGate(initial: DaemonReadiness.started, clock: TestClock())
        let request = Task { await waitError(gate, .playbackReady) }
        await yieldUntil("the request is parked") { gate.pendingCount == 1 }
        request.cancel()
        #expect(await request.value == .cancelled(waitingFor: "playbackReady"))
        #expect(gate.pendingCount == 0)
    }

    @Test("a waiter cancelled before it parks never parks")
    func cancelledBeforeParking() async {
        let gate = ReadinessGate(initial: DaemonReadiness.started, clock: TestClock())
        let request = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await waitError(gate, .bus)
        }
        #expect(await request.value == .cancelled(waitingFor: "bus"))
        #expect(gate.pendingCount == 0)
    }
}

/// Waits and returns the typed error, or `nil` if the level was reached.
private func waitError(
    _ gate: ReadinessGate<DaemonReadiness>, _ level: DaemonReadiness, timeout: Duration? = nil
) async -> ReadinessError? {
    do throws(ReadinessError) {
        try await gate.wait(for: level, timeout: timeout)
        return nil
    } catch {
        return error
    }
}
