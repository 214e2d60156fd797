import AsyncSignals
import Dispatch

/// The baseline the readiness gate is measured against: the seeds' pattern (Signal-iOS
/// AppReadiness / ReadyFlag), written here from its description: a serial dispatch queue guards a
/// ready flag and an array of labelled closures; registering hops onto the queue; setting the
/// flag takes the array and runs the closures in order, timing each one so slow ones can be
/// logged under their label. Labels are `String`s built at the call site, as the seeds do.
final class DispatchReadinessBaseline: @unchecked Sendable {
    private struct Task {
        let label: String
        let block: () -> Void
    }

    private let queue = DispatchQueue(label: "readiness-baseline")
    private var isReady = false
    private var tasks: [Task] = []
    private let clock = ContinuousClock()
    private(set) var slowBlocks = 0

    func runNowOrWhenReady(label: String, _ block: @escaping () -> Void) {
        let runNow: Bool = queue.sync {
            if isReady { return true }
            tasks.append(Task(label: label, block: block))
            return false
        }
        if runNow { perform(Task(label: label, block: block)) }
    }

    func setReady() {
        let released: [Task] = queue.sync {
            isReady = true
            defer { tasks = [] }
            return tasks
        }
        for task in released { perform(task) }
    }

    private func perform(_ task: Task) {
        let start = clock.now
        task.block()
        if start.duration(to: clock.now) > .milliseconds(10) { slowBlocks += 1 }
    }
}

/// The same pattern with nothing but the queue and the closures: no labels, no timing. Reported
/// beside the feature-equivalent baseline so the comparison is honest about where time goes.
final class BareDispatchBaseline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "bare-baseline")
    private var isReady = false
    private var blocks: [() -> Void] = []

    func runNowOrWhenReady(_ block: @escaping () -> Void) {
        let runNow: Bool = queue.sync {
            if isReady { return true }
            blocks.append(block)
            return false
        }
        if runNow { block() }
    }

    func setReady() {
        let released: [() -> Void] = queue.sync {
            isReady = true
            defer { blocks = [] }
            return blocks
        }
        for block in released { block() }
    }
}
