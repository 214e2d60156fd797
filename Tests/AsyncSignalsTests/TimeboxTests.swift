@testable import AsyncSignals
import Clocks
import Synchronization
import TestSupport
import Testing

private struct BlueZRefused: Error, Equatable {}

/// Counts how often an operation saw its own cancellation.
private final class CancellationSeen: Sendable {
    private let count = Mutex(0)
    func note() { count.withLock { $0 += 1 } }
    var times: Int { count.withLock { $0 } }
}

/// `timeboxed` races an operation against a deadline on an injected clock; every wait with a
/// timeout in speakerd (a one-shot signal's value, the gate's wait, start-up's steps) rests on it.
@Suite("Timebox: an operation against a deadline, nothing left behind", .timeLimit(.minutes(1)))
struct TimeboxTests {
    @Test("an operation that finishes in time gives its value, and its timer leaves no sleeper on the clock")
    func finishesInTime() async throws {
        let clock = TestClock()
        let outcome = try await timeboxed(.seconds(10), clock: clock) { "hci0 powered" }
        guard case .finished(let value) = outcome else {
            Issue.record("expected the value, got \(outcome)")
            return
        }
        #expect(value == "hci0 powered")
        try await clock.checkSuspension()
    }

    @Test("an operation still running at the deadline times out there, not before, and is cancelled")
    func timesOutAtTheDeadline() async throws {
        let clock = TestClock()
        let seen = CancellationSeen()
        let (never, keepAlive) = AsyncStream.makeStream(of: Never.self)
        let started = DoneFlag()
        let race = Task {
            try await timeboxed(.seconds(10), clock: clock) {
                started.set()
                for await _ in never {}  // ends only when cancelled
                seen.note()
                return "connected"
            }
        }
        // The deadline is fixed when the race begins: the clock moves only once it has (the
        // operation runs and the timer sleeps on the clock), or a loaded machine would start the
        // race after the advances and wait for a deadline the test never reaches.
        await yieldUntil("the operation runs and the deadline's timer sleeps on the clock") {
            guard started.isSet else { return false }
            do { try await clock.checkSuspension(); return false } catch { return true }
        }
        await clock.advance(by: .seconds(9))
        try await Task.sleep(for: .milliseconds(20))
        #expect(seen.times == 0, "cancelled before its deadline")
        await clock.advance(by: .seconds(1))
        let outcome = try await race.value
        guard case .timedOut = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(seen.times == 1, "the losing operation was not cancelled")
        keepAlive.finish()
    }

    @Test("the operation's own error comes through as itself")
    func operationErrorIsRethrown() async throws {
        let clock = TestClock()
        await #expect(throws: BlueZRefused()) {
            _ = try await timeboxed(.seconds(10), clock: clock) { () async throws -> Int in throw BlueZRefused() }
        }
        try await clock.checkSuspension()
    }

    @Test("cancelling the caller cancels both sides: CancellationError, and no sleeper left behind")
    func callerCancellation() async throws {
        let clock = TestClock()
        let seen = CancellationSeen()
        let started = OneShotSignal<Void, Never>()
        let race = Task {
            try await timeboxed(.seconds(10), clock: clock) {
                _ = started.succeed(())
                do { try await Task.sleep(for: .seconds(3_600)) } catch { seen.note(); throw error }
                return 0
            }
        }
        _ = try await started.value()
        race.cancel()
        await #expect(throws: CancellationError.self) { _ = try await race.value }
        #expect(seen.times == 1)
        try await clock.checkSuspension()
    }

    @Test("a stopwatch's deadline is fixed when it is made: a sleep begun late wakes on time, one begun after it returns at once")
    func stopwatchDeadlines() async throws {
        let clock = TestClock()
        let stopwatch = Stopwatch(clock: clock)
        await clock.advance(by: .seconds(3))
        #expect(stopwatch.elapsed() == .seconds(3))

        // Begun 3 s late, a sleep until 5 s after the start wakes 2 s later.
        let woke = DoneFlag()
        let sleeper = Task {
            try await stopwatch.sleep(untilElapsed: .seconds(5))
            woke.set()
        }
        await clock.advance(by: .seconds(1))
        #expect(!woke.isSet)
        await clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(woke.isSet)

        // A deadline already reached (exactly now, or past) does not wait for the clock to move.
        try await stopwatch.sleep(untilElapsed: .seconds(5))
        try await stopwatch.sleep(untilElapsed: .seconds(1))
        try await clock.checkSuspension()
    }

    @Test("a timeout is spoken as a person reads it", arguments: [
        (Duration.seconds(30), "30 s"), (.milliseconds(1_500), "1.5 s"), (.milliseconds(250), "250 ms"), (.zero, "0 s"),
    ])
    func spokenSeconds(duration: Duration, spoken: String) {
        #expect(duration.spokenSeconds == spoken)
    }
}
