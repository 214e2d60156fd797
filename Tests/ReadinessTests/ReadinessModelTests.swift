@testable import Readiness
import TestSupport
import Testing

/// The gate's documented semantics, written as plainly as possible: what should have run, in
/// which order, after each step.
private struct GateModel {
    var level: Stage
    var pending: [(id: Int, level: Stage, isHook: Bool)] = []
    var ran: [Int] = []

    mutating func register(_ id: Int, _ level: Stage, isHook: Bool) {
        if level <= self.level { ran.append(id) } else { pending.append((id, level, isHook)) }
    }

    mutating func raise(to target: Stage) {
        guard target > level else { return }
        level = target
        let released = pending.filter { $0.level <= target }
        pending.removeAll { $0.level <= target }
        // Lower levels first; within a level hooks first; then registration order.
        ran += released.sorted {
            ($0.level.rank, $0.isHook ? 0 : 1, $0.id) < ($1.level.rank, $1.isHook ? 0 : 1, $1.id)
        }.map(\.id)
    }

    mutating func drop(to target: Stage) {
        if target < level { level = target }
    }
}

@Suite("Readiness gate: random sequences behave like the model", .timeLimit(.minutes(1)))
struct ReadinessModelTests {
    @Test("500 random sequences of registrations, raises and drops match the model step by step")
    func matchesModel() {
        for seed in UInt64(1)...500 {
            var random = SplitMix64(seed: seed)
            let gate = ReadinessGate(initial: Stage.started)
            var model = GateModel(level: .started)
            let journal = Journal()
            for id in 0..<120 {
                let level = Stage.allCases.randomElement(using: &random)!
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    gate.runNowOrWhen(level) { journal.record("\(id)") }
                    model.register(id, level, isHook: false)
                case 5..<7:
                    gate.runNowOrWhenAboutToReach(level) { journal.record("\(id)") }
                    model.register(id, level, isHook: true)
                case 7..<9:
                    gate.raise(to: level)
                    model.raise(to: level)
                default:
                    gate.drop(to: level)
                    model.drop(to: level)
                }
                guard journal.all == model.ran.map({ "\($0)" }), gate.level == model.level else {
                    Issue.record("seed \(seed) diverged at step \(id): gate ran \(journal.all), model \(model.ran)")
                    return
                }
            }
            #expect(gate.pendingCount == model.pending.count, "seed \(seed)")
        }
    }
}
