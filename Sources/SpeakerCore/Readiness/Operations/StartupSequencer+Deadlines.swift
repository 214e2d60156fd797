import HeapModule

/// One operation's timeout, as an offset on the sequencer's stopwatch.
struct StartupDeadline: Comparable {
    let offset: Duration
    let index: Int
    let timeout: Duration

    static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.offset, lhs.index) < (rhs.offset, rhs.index)
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.offset == rhs.offset && lhs.index == rhs.index }
}

extension StartupSequencer {
    /// Per-operation timeouts share one timer: a min-heap of deadlines and a single task that
    /// sleeps until the earliest. A timer task per operation would cost a kernel timer
    /// registration and a cancellation each, which measured as most of the sequencer's
    /// per-operation overhead. Finished operations are removed lazily, when the timer wakes.
    func scheduleDeadline(for index: Int, timeout: Duration, startedAt start: Duration) {
        let deadline = StartupDeadline(offset: start + timeout, index: index, timeout: timeout)
        deadlines.insert(deadline)
        if let target = timerTarget, target <= deadline.offset { return }
        armTimer(until: deadline.offset)
    }

    private func armTimer(until offset: Duration) {
        deadlineTimer?.cancel()
        timerTarget = offset
        let stopwatch = self.stopwatch
        deadlineTimer = Task.detached {
            do { try await stopwatch.sleep(untilElapsed: offset) } catch { return }
            await self.deadlineReached(offset)
        }
    }

    /// Times out every running operation whose deadline has passed, then re-arms for the next.
    func deadlineReached(_ offset: Duration) {
        guard timerTarget == offset else { return }  // superseded by an earlier deadline
        timerTarget = nil
        deadlineTimer = nil
        let now = max(offset, stopwatch.elapsed())
        while let first = deadlines.min, first.offset <= now {
            deadlines.removeMin()
            operationTimedOut(first.index, after: first.timeout)
        }
        while let first = deadlines.min, !isRunning(first.index) { deadlines.removeMin() }
        if let next = deadlines.min, case .running = lifecycle { armTimer(until: next.offset) }
    }

    /// Stops the shared timer (the sequence has finished).
    func disarmTimer() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
        timerTarget = nil
    }
}
