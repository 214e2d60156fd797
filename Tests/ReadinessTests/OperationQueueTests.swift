@testable import AsyncSignals
import AsyncSignals
import Clocks
@testable import Readiness
import TestSupport
import Testing

private struct PairingError: Error, CustomStringConvertible {
    var description: String { "the speaker refused pairing" }
}

/// Reads queue events until `count` have arrived.
private func collect(_ count: Int, from iterator: inout AsyncStream<QueueEvent>.Iterator) async -> [QueueEvent] {
    var events: [QueueEvent] = []
    while events.count < count, let event = await next(&iterator) { events.append(event) }
    return events
}

/// Reads `iterator` up to the queue's next `drained`: nothing queued or running any more.
private func untilDrained(_ iterator: inout AsyncStream<QueueEvent>.Iterator) async {
    while let event = await iterator.next(), event != .drained {}
}

@Suite("Operation queue: named async operations", .timeLimit(.minutes(1)))
struct OperationQueueTests {
    @Test("an operation that returns finishes ok, bracketed by busy and drained")
    func returningFinishes() async throws {
        let queue = AsyncOperationQueue(clock: TestClock())
        var events = queue.events().makeAsyncIterator()
        let ticket = await queue.add("load state") { _ in }
        #expect(try await ticket.outcome() == .ok)
        let seen = await collect(4, from: &events)
        #expect(seen == [
            .busy, .started(name: "load state", id: ticket.id),
            .finished(name: "load state", id: ticket.id, outcome: .ok), .drained,
        ])
        #expect(await queue.isBusy == false)
    }

    @Test("a throwing operation fails with the error's description")
    func throwingFails() async throws {
        let queue = AsyncOperationQueue(clock: TestClock())
        let ticket = await queue.add("pair") { _ in throw PairingError() }
        #expect(try await ticket.outcome() == .failed("the speaker refused pairing"))
    }

    @Test("callback-style work finishes only when it calls finish, not when it returns")
    func explicitFinish() async throws {
        let queue = AsyncOperationQueue(clock: TestClock())
        var events = queue.events().makeAsyncIterator()
        let started = OneShotSignal<OperationContext, Never>()
        let ticket = await queue.add("connect speaker", completion: .explicit) { context in
            started.succeed(context)  // hand the context to a "callback" and return at once
        }
        let context = try await started.value()
        await yieldUntil("the work has returned") { await queue.runningNames == ["connect speaker"] }
        #expect(await queue.isBusy, "returning did not finish it")
        #expect(context.finish())
        #expect(!context.fail(reason: "too late"), "the first ending wins")
        #expect(try await ticket.outcome() == .ok)
        await untilDrained(&events)
    }

    @Test("a timed-out operation calls its timeout callback and its work is cancelled")
    func timeoutCancelsWork() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock, logger: LogCapture().logger())
        var events = queue.events().makeAsyncIterator()
        let workCancelled = OneShotSignal<Bool, Never>()
        let timedOutNames = Journal()
        let ticket = await queue.add(
            "connect speaker", timeout: .seconds(3), onTimeout: { timedOutNames.record($0) }
        ) { _ in
            // Hangs until cancelled (and does not sleep on the clock, so the only sleeper is
            // the queue's timer).
            do { _ = try await OneShotSignal<Void, Never>().result() } catch { workCancelled.succeed(true) }
        }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(3))
        #expect(try await ticket.outcome() == .timedOut)
        #expect(try await workCancelled.value() == true)
        #expect(timedOutNames.all == ["connect speaker"])
        await untilDrained(&events)
    }

    @Test("an operation that keeps timing out is warned about once, and again only after it succeeded in between")
    func repeatedTimeoutSaidOnce() async throws {
        let clock = TestClock()
        let logs = LogCapture()
        let queue = AsyncOperationQueue(clock: clock, logger: logs.logger())
        var events = queue.events().makeAsyncIterator()
        for hangs in [true, true, true, false, true] {
            let ticket = await queue.add("connect speaker", timeout: .seconds(3)) { _ in
                if hangs { _ = try await OneShotSignal<Void, Never>().result() }
            }
            if hangs {
                await clock.untilSomeoneSleeps()
                await clock.advance(by: .seconds(3))
                #expect(try await ticket.outcome() == .timedOut)
            } else {
                #expect(try await ticket.outcome() == .ok)
            }
            await untilDrained(&events)
        }
        let said = logs.warnings.map(\.message)
        #expect(said.count == 2, "\(said)")
        #expect(said.allSatisfy { $0.hasPrefix("operation connect speaker timed out after 3.0 seconds") }, "\(said)")
    }

    @Test("operations without a timeout of their own get the 10 s default")
    func defaultTimeoutIsTenSeconds() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock, logger: LogCapture().logger())
        #expect(queue.defaultTimeout == .seconds(10))
        let ticket = await queue.add("hang") { _ in _ = try await OneShotSignal<Void, Never>().result() }
        await clock.untilSomeoneSleeps()  // the queue's timer: the work does not sleep on the clock
        await clock.advance(by: .milliseconds(9_999))
        #expect(await queue.runningNames == ["hang"])
        await clock.advance(by: .milliseconds(1))
        #expect(try await ticket.outcome() == .timedOut)
    }

    @Test("cancelling by name ends the running operation and its work")
    func cancelByName() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock)
        let ticket = await queue.add("scan") { _ in try await clock.sleep(for: .seconds(5)) }
        await yieldUntil("it runs") { await queue.runningNames == ["scan"] }
        await queue.cancel(named: "scan")
        #expect(try await ticket.outcome() == .cancelled)
        #expect(await queue.isBusy == false)
    }

    @Test("with .drop, a second operation of the same name is skipped while the first runs")
    func uniquenessDrop() async throws {
        let queue = AsyncOperationQueue(clock: TestClock())
        let release = OneShotSignal<Void, Never>()
        let first = await queue.add("reconnect", uniqueness: .drop) { _ in _ = try await release.result() }
        let second = await queue.add("reconnect", uniqueness: .drop) { _ in Issue.record("must not run") }
        #expect(try await second.outcome().kind == "skipped")
        release.succeed(())
        #expect(try await first.outcome() == .ok)
    }

    @Test("with .replace, the old operation is cancelled and the new one runs")
    func uniquenessReplace() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock)
        var events = queue.events().makeAsyncIterator()
        let old = await queue.add("scan", uniqueness: .replace) { _ in try await clock.sleep(for: .seconds(60)) }
        await yieldUntil("the old scan runs") { await queue.runningNames == ["scan"] }
        let new = await queue.add("scan", uniqueness: .replace) { _ in }
        #expect(try await old.outcome() == .cancelled)
        #expect(try await new.outcome() == .ok)
        let seen = await collect(6, from: &events)
        #expect(seen == [
            .busy,
            .started(name: "scan", id: old.id),
            .finished(name: "scan", id: old.id, outcome: .cancelled),
            .started(name: "scan", id: new.id),
            .finished(name: "scan", id: new.id, outcome: .ok),
            .drained,
        ], "the queue never looks drained while one scan replaces another")
    }

    @Test("with .allowBoth, two operations of the same name both run")
    func uniquenessAllowBoth() async throws {
        let queue = AsyncOperationQueue(clock: TestClock())
        let first = await queue.add("log") { _ in }
        let second = await queue.add("log", uniqueness: .allowBoth) { _ in }
        #expect(try await first.outcome() == .ok)
        #expect(try await second.outcome() == .ok)
    }

    @Test("operations in one group run one after another, in the order added")
    func sequentialGroup() async throws {
        let queue = AsyncOperationQueue(maxConcurrentOperations: 8, clock: TestClock())
        let journal = Journal()
        let gates = (0..<3).map { _ in OneShotSignal<Void, Never>() }
        var tickets: [OperationTicket] = []
        for index in 0..<3 {
            tickets.append(await queue.add("write state \(index)", group: "state") { _ in
                journal.record("start \(index)")
                _ = try await gates[index].result()
                journal.record("end \(index)")
            })
        }
        let other = await queue.add("unrelated") { _ in journal.record("unrelated") }
        #expect(try await other.outcome() == .ok, "ungrouped work is not held up by the group")
        await yieldUntil("the first write runs") { journal.all.contains("start 0") }
        #expect(await queue.runningNames == ["write state 0"])
        for gate in gates.reversed() { gate.succeed(()) }
        for ticket in tickets { #expect(try await ticket.outcome() == .ok) }
        let writes = journal.all.filter { $0 != "unrelated" }
        #expect(writes == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"])
    }

    @Test("no more than the maximum number of operations run at once")
    func maxConcurrency() async throws {
        let queue = AsyncOperationQueue(maxConcurrentOperations: 2, clock: TestClock())
        var events = queue.events().makeAsyncIterator()
        let release = OneShotSignal<Void, Never>()
        var tickets: [OperationTicket] = []
        for index in 0..<5 {
            tickets.append(await queue.add("op \(index)") { _ in _ = try await release.result() })
        }
        #expect(await queue.runningNames == ["op 0", "op 1"])
        #expect(await queue.pendingCount == 3)
        release.succeed(())
        for ticket in tickets { #expect(try await ticket.outcome() == .ok) }
        await untilDrained(&events)
    }

    @Test("a shut-down queue cancels its work and skips new operations")
    func shutDown() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock)
        let running = await queue.add("scan") { _ in try await clock.sleep(for: .seconds(60)) }
        await queue.shutDown()
        #expect(try await running.outcome() == .cancelled)
        let late = await queue.add("late") { _ in Issue.record("must not run") }
        #expect(try await late.outcome().kind == "skipped")
    }

    @Test("cancelling an operation that is still waiting removes it without ever starting it")
    func cancelQueuedOperation() async throws {
        let queue = AsyncOperationQueue(maxConcurrentOperations: 1, clock: TestClock())
        var events = queue.events().makeAsyncIterator()
        let release = OneShotSignal<Void, Never>()
        let first = await queue.add("connect speaker") { _ in _ = try await release.result() }
        let waiting = await queue.add("scan") { _ in Issue.record("must not run") }
        await queue.cancel(waiting.id)
        #expect(try await waiting.outcome() == .cancelled)
        release.succeed(())
        #expect(try await first.outcome() == .ok)
        let seen = await collect(5, from: &events)
        #expect(seen == [
            .busy,
            .started(name: "connect speaker", id: first.id),
            .finished(name: "scan", id: waiting.id, outcome: .cancelled),
            .finished(name: "connect speaker", id: first.id, outcome: .ok),
            .drained,
        ])
    }

    @Test("an explicit-finish operation that never finishes is ended by its timeout")
    func explicitWorkTimesOut() async throws {
        let clock = TestClock()
        let queue = AsyncOperationQueue(clock: clock, logger: LogCapture().logger())
        let ticket = await queue.add("pair speaker", timeout: .seconds(30), completion: .explicit) { _ in }
        await yieldUntil("it runs") { await queue.runningNames == ["pair speaker"] }
        await clock.untilSomeoneSleeps()
        await clock.advance(by: .seconds(30))
        #expect(try await ticket.outcome() == .timedOut)
    }
}
