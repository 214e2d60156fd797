import AsyncSignals
extension AsyncOperationQueue {
    /// Starts one operation: its work, its timeout timer, and the observer that books its end.
    ///
    /// The operation's outcome is a one-shot signal; the work returning or failing, an explicit
    /// finish, the timer and a cancellation all race to resolve it, and the first one decides.
    /// The loser paths are then cancelled, so timed-out work is told to stop.
    func start(_ queued: Queued) {
        let context = queued.context
        let work = queued.work
        let completion = queued.completion
        let workTask = Task {
            do {
                try await work(context)
                if completion == .onReturn { context.finish() }
            } catch is CancellationError {
                context.completion.succeed(.cancelled)
            } catch {
                context.fail(error)
            }
        }
        var timerTask: Task<Void, Never>?
        if let timeout = queued.timeout {
            let stopwatch = Stopwatch(clock: clock)  // the deadline counts from now
            let onTimeout = queued.onTimeout
            timerTask = Task {
                do { try await stopwatch.sleep(untilElapsed: timeout) } catch { return }
                guard context.completion.succeed(.timedOut) else { return }
                onTimeout?(context.name)
            }
        }
        running[context.id] = Running(queued: queued, workTask: workTask, timerTask: timerTask)
        eventBroadcaster.publish(.started(name: context.name, id: context.id))
        context.completion.observe { [weak self] result in
            guard let self else { return }
            let outcome = result.get()
            Task { await self.operationEnded(context.id, outcome) }
        }
    }
}
