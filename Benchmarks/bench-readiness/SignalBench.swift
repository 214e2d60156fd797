import AsyncSignals
import Synchronization

/// 100,000 tasks parked on one one-shot signal, released by a single `succeed`.
struct SignalBench {
    let waiters: Int
    let runs: Int

    struct Result {
        /// From `succeed` to the last waiter having resumed.
        let release: Sample
        /// Spawning and parking all waiters.
        let park: Sample
    }

    func run() async -> Result {
        var releases: [Sample] = [], parks: [Sample] = []
        for round in 0...runs {
            let (park, release) = await once()
            if round > 0 { parks.append(park); releases.append(release) }
        }
        return Result(release: medians(releases), park: medians(parks))
    }

    /// Unstructured tasks, not a task group: a group's bookkeeping for 100,000 children would
    /// dominate (and hide) the signal's own cost.
    private func once() async -> (Sample, Sample) {
        let signal = OneShotSignal<Int, Never>()
        let allResumed = OneShotSignal<Void, Never>()
        let countdown = Countdown(waiters)
        let clock = ContinuousClock()
        let parkStart = clock.now
        let parkCPU = processCPUTime()
        for _ in 0..<waiters {
            Task {
                _ = try? await signal.value()
                if countdown.tick() { allResumed.succeed(()) }
            }
        }
        while signal.waiterCount < waiters { await Task.yield() }
        let parked = Sample(wall: parkStart.duration(to: clock.now), cpu: processCPUTime() - parkCPU)
        let releaseStart = clock.now
        let releaseCPU = processCPUTime()
        signal.succeed(1)
        _ = try? await allResumed.result()
        return (parked, Sample(wall: releaseStart.duration(to: clock.now), cpu: processCPUTime() - releaseCPU))
    }
}

/// Counts resumed waiters; the last one says so.
final class Countdown: Sendable {
    private let left: Atomic<Int>

    init(_ count: Int) { left = Atomic(count) }

    /// Returns `true` for the call that brings the count to zero.
    func tick() -> Bool { left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}
