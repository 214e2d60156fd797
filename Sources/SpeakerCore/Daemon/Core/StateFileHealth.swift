import Logging

/// Whether the state file is being saved, decided in one synchronous step: the one status
/// condition it can raise, "speakers will not be remembered" (its directory cannot be written),
/// and the retry of a failed write, every 5 s at first, doubling to once a minute, until the
/// write works. A value: ``StateFileFeature`` feeds it what each write did and runs its effects.
struct StateFileHealth: Equatable, Sendable {
    /// The first retry's delay, and the longest.
    static let firstRetry = Duration.seconds(5)
    static let longestRetry = Duration.seconds(60)

    enum Event: Equatable, Sendable {
        /// A write (a connection recorded, a volume remembered) did not fail; `allSaved`:
        /// nothing is left unwritten (a volume that did not change writes nothing, and proves
        /// nothing of a directory that still cannot be written).
        case written(allSaved: Bool)
        /// A write failed, in the store's words.
        case writeFailed(String)
        /// The retry timer armed for `deadline` fired.
        case retryDue(deadline: ErasedClock.Instant)
        /// The retry's `savePending` wrote everything, or failed again.
        case retried(failure: String?)
        /// The daemon winds down: no retry is armed again.
        case stop
    }

    enum Effect: Equatable, Sendable {
        case armRetry(deadline: ErasedClock.Instant)
        case cancelRetry
        /// Write what is still unsaved; answered by `retried`.
        case savePending
        case publishStatus
        case log(Logger.Level, String)
    }

    /// Why speakers may not be remembered, if so (a status warning, never only a log line).
    private(set) var problem: String?
    private var retry: Retry?
    private var stopped = false

    private struct Retry: Equatable, Sendable {
        var deadline: ErasedClock.Instant
        var delay: Duration
        /// The retry's own `savePending` is under way.
        var saving = false
    }

    var isRetryArmed: Bool { retry != nil }

    mutating func step(_ event: Event, now: ErasedClock.Instant) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case .written(let allSaved):
            if allSaved { written(into: &effects) }
        case .writeFailed(let error):
            let problem = "speakers will not be remembered: \(error)"
            // Said when it begins: each failed write names a temporary file of its own, so the
            // words differ every time while the problem is the same one (status shows the latest).
            let began = self.problem == nil
            if began { effects.append(.log(.error, problem)) }
            self.problem = problem
            if retry == nil, !stopped {
                retry = Retry(deadline: now.advanced(by: Self.firstRetry), delay: Self.firstRetry)
                effects.append(.armRetry(deadline: now.advanced(by: Self.firstRetry)))
            }
            if began { effects.append(.publishStatus) }
        case .retryDue(let deadline):
            guard var retry, retry.deadline == deadline, !retry.saving, !stopped else { break }
            retry.saving = true
            self.retry = retry
            effects.append(.savePending)
        case .retried(let failure):
            guard var retry, retry.saving else { break }
            if let failure {
                problem = "speakers will not be remembered: \(failure)"
                guard !stopped else { break }
                retry.saving = false
                retry.delay = min(retry.delay * 2, Self.longestRetry)
                retry.deadline = now.advanced(by: retry.delay)
                self.retry = retry
                effects.append(.armRetry(deadline: retry.deadline))
            } else {
                self.retry = nil
                written(into: &effects)
            }
        case .stop:
            stopped = true
            if retry != nil { effects.append(.cancelRetry) }
            retry = nil
        }
        return effects
    }

    /// Everything is on disk: the problem, if there was one, is over.
    private mutating func written(into effects: inout [Effect]) {
        guard problem != nil else { return }
        effects.append(.log(.notice, "state directory writable again: known speakers are saved"))
        problem = nil
        if retry != nil { effects.append(.cancelRetry) }
        retry = nil
        effects.append(.publishStatus)
    }
}
