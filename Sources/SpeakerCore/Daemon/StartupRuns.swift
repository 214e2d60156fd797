import Readiness

/// Start-up's runs: what they did (``StartupRecord``), the run in progress while the bus step may
/// still switch it to "launched by request", and the run started again after the compatibility
/// gate reopened.
///
/// The steps themselves are the daemon's methods (`+Startup`); this keeps what the runs leave
/// behind and the one task a run again is, so winding down can cancel it.
struct StartupRuns {
    /// A run in progress that the bus step may still switch to "launched by request": its
    /// sequencer, its steps' work, and whether it started with known speakers.
    typealias Revisable = (sequencer: StartupSequencer, operations: [String: StartupOperation.Body], knownSpeakers: Bool)

    /// What start-up has done so far (the last run, the boot's, their numbers), for `startup`.
    private(set) var record = StartupRecord()
    /// The run in progress, when it may still become "launched by request" (a start by systemd).
    private(set) var revisable: Revisable?
    /// Start-up run again after the compatibility gate reopened (see `reopenGate`).
    private(set) var rerun: Task<Void, Never>?

    /// A run's graph starts; `revisable` when the bus step may still switch it.
    mutating func began(_ revisable: Revisable?) {
        self.revisable = revisable
    }

    /// The run's graph has run: `timeline` is recorded, and nothing is in progress any more.
    mutating func ended(_ timeline: StartupTimeline, startedAfter: Duration, reason: String?) {
        revisable = nil
        record.ended(timeline, startedAfter: startedAfter, reason: reason)
    }

    /// Start-up runs again in the task `start` makes, replacing (and cancelling) any run again before it.
    mutating func runAgain(_ start: () -> Task<Void, Never>) {
        rerun?.cancel()
        rerun = start()
    }

    /// Winding down: the run again, if any, is cancelled and dropped.
    mutating func stop() {
        rerun?.cancel()
        rerun = nil
    }
}
