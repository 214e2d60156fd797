import Readiness
import SpeakerdAPI

/// What start-up has done so far, for `startup` and the bus step's verdict: the last run's
/// timeline, its number, when it began and why it ran again, and the boot's own run, kept once
/// a later one (bluetoothd came back) replaces it, so `startup` shows both.
struct StartupRecord {
    private(set) var last: StartupTimeline?
    private(set) var boot: StartupTimeline?
    private(set) var run = 0
    private var startedAfter = Duration.zero
    private var reason: String?

    /// Run `run + 1` ended with `timeline`; it began `startedAfter` into the daemon's life, for `reason`.
    mutating func ended(_ timeline: StartupTimeline, startedAfter: Duration, reason: String?) {
        if boot == nil { boot = timeline }
        last = timeline
        run += 1
        self.startedAfter = startedAfter
        self.reason = reason
    }

    /// The `startup` report of the last run (nil while the first still runs).
    func report(outputChoice: String?) -> StartupReport? {
        guard let last else { return nil }
        var report = StartupReport(last)
        report.outputChoice = outputChoice
        report.run = run
        report.startedAfterMs = startedAfter.milliseconds
        report.reason = reason
        if run > 1, let boot { report.bootRun = StartupReport(boot) }
        return report
    }
}
