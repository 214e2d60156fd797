import Synchronization

/// When `PlaybackWaiter` asks for the status again: one element of `wakeUps` per wake-up.
///
/// Every signal is a wake-up. So is a tick of the clock, armed by the waiter each time it waits:
/// every `fallbackPollInterval` while signals are followed (they can stop without their stream
/// ending: a speakerd restarted behind a live bus), every `pollInterval` without signals or once
/// their stream has ended with its connection. Ticks fall on fixed instants from the start, so a
/// test clock advanced in one jump still wakes the waiter, whenever the ticking task gets to run;
/// instants missed by more than one interval are skipped rather than caught up on.
struct PlaybackWaiterTicks: Sendable {
    let wakeUps: AsyncStream<Void>
    private let arms: AsyncStream<Void>.Continuation
    private let tasks: [Task<Void, Never>]

    init(signals: AsyncStream<Void>?, clock: any Clock<Duration>, pollInterval: Duration, fallbackPollInterval: Duration) {
        // Unbounded: each signal is one status read, as callers counting on signals expect.
        let (wakeUps, wake) = AsyncStream.makeStream(of: Void.self)
        let (arms, arm) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let signalsEnded = SignalsEnded(signals == nil)
        var tasks = [Self.ticking(clock, arms: arms, wake: wake) {
            signalsEnded.value.load(ordering: .relaxed) ? pollInterval : fallbackPollInterval
        }]
        if let signals {
            tasks.append(Task {
                for await _ in signals { wake.yield() }
                signalsEnded.value.store(true, ordering: .relaxed)
                wake.yield() // The connection is gone: look at once.
            })
        }
        self.wakeUps = wakeUps
        self.arms = arm
        self.tasks = tasks
    }

    /// The waiter is about to wait: let the next tick come.
    func armNextTick() {
        arms.yield()
    }

    func cancel() {
        tasks.forEach { $0.cancel() }
        arms.finish()
    }

    private static func ticking<C: Clock<Duration>>(
        _ clock: C, arms: AsyncStream<Void>, wake: AsyncStream<Void>.Continuation,
        interval: @escaping @Sendable () -> Duration
    ) -> Task<Void, Never> {
        let start = clock.now
        return Task {
            var last = start
            for await _ in arms {
                let step = interval()
                var deadline = last.advanced(by: step)
                let now = clock.now
                while deadline.advanced(by: step) < now { deadline = deadline.advanced(by: step) }
                do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
                last = deadline
                wake.yield()
            }
        }
    }
}

/// Whether the signal stream has ended, shared by the two tasks.
private final class SignalsEnded: Sendable {
    let value: Atomic<Bool>
    init(_ ended: Bool) { value = Atomic(ended) }
}
