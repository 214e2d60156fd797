import Foundation
@testable import Readiness
import Synchronization
import Testing

@Suite("Readiness gate: registrations racing level changes", .timeLimit(.minutes(1)))
struct ReadinessStressTests {
    /// 100,000 registrations from eight tasks race a dedicated thread that keeps raising and
    /// dropping the level. Afterwards the gate is raised to the top: every block must have run
    /// exactly once (never twice, never lost), and nothing may be left pending.
    @Test("100,000 registrations racing raises and drops each run exactly once")
    func racingRegistrationsRunExactlyOnce() async {
        let total = 100_000
        let registrars = 8
        let gate = ReadinessGate(initial: Stage.started)
        let tally = Tally(total)

        let churn = Thread {
            var generator = SystemRandomNumberGenerator()
            let levels = Stage.allCases
            while tally.churning.load(ordering: .acquiring) {
                let target = levels.randomElement(using: &generator)!
                if gate.raise(to: target) || gate.drop(to: target) {
                    tally.levelChanges.add(1, ordering: .relaxed)
                }
            }
        }
        churn.start()

        await withTaskGroup(of: Void.self) { group in
            for registrar in 0..<registrars {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    for id in stride(from: registrar, to: total, by: registrars) {
                        let level = Stage.allCases.randomElement(using: &generator)!
                        tally.levels.withLock { $0[id] = UInt8(level.rank) }
                        let block: @Sendable () -> Void = { tally.runs.withLock { $0[id] &+= 1 } }
                        if id % 5 == 0 {
                            gate.runNowOrWhenAboutToReach(level, label: "stress \(id)", block)
                        } else {
                            gate.runNowOrWhen(level, label: "stress \(id)", block)
                        }
                        if id % 1_000 == 0 { await Task.yield() }
                    }
                }
            }
        }
        tally.churning.store(false, ordering: .releasing)
        while !churn.isFinished { await Task.yield() }

        // Where the churn stopped, everything at or below the level must have run: nothing is
        // stuck waiting for a level that is already reached.
        let stoppedAt = gate.level
        let levels = tally.levels.withLock { $0 }
        let runsBefore = tally.runs.withLock { $0 }
        let stuck = runsBefore.indices.filter { runsBefore[$0] == 0 && Int(levels[$0]) <= stoppedAt.rank }
        #expect(stuck.isEmpty, "reached but never run: \(stuck.prefix(10))")
        #expect(gate.pendingCount == runsBefore.filter { $0 == 0 }.count)

        gate.raise(to: .ready)
        #expect(gate.pendingCount == 0)
        let counts = tally.runs.withLock { $0 }
        let never = counts.indices.filter { counts[$0] == 0 }
        let twice = counts.indices.filter { counts[$0] > 1 }
        #expect(never.isEmpty, "lost: \(never.prefix(10))")
        #expect(twice.isEmpty, "ran more than once: \(twice.prefix(10))")
        #expect(tally.levelChanges.load(ordering: .relaxed) > 100, "the level really changed during the race")
    }

    /// Waiters race the same churn: each parks or returns at once, and all are released by the
    /// final raise, none left behind.
    @Test("10,000 async waiters racing raises and drops are all released")
    func racingWaitersAreAllReleased() async throws {
        let gate = ReadinessGate(initial: Stage.started)
        let tally = Tally(0)
        let churn = Thread {
            let levels = Stage.allCases
            var step = 0
            while tally.churning.load(ordering: .acquiring) {
                let target = levels[step % levels.count]
                _ = gate.raise(to: target) || gate.drop(to: target)
                step += 3
            }
        }
        churn.start()
        let released = try await withThrowingTaskGroup(of: Int.self) { group in
            for id in 0..<10_000 {
                group.addTask {
                    try await gate.wait(for: Stage.allCases[id % 5])
                    return 1
                }
            }
            await Task.yield()
            tally.churning.store(false, ordering: .releasing)
            while !churn.isFinished { await Task.yield() }
            gate.raise(to: .ready)
            return try await group.reduce(0, +)
        }
        #expect(released == 10_000)
        #expect(gate.pendingCount == 0)
    }
}

/// Shared counters for the racing threads and tasks.
private final class Tally: Sendable {
    let runs: Mutex<[UInt8]>
    let levels: Mutex<[UInt8]>
    let churning = Atomic<Bool>(true)
    let levelChanges = Atomic<Int>(0)

    init(_ count: Int) {
        runs = Mutex([UInt8](repeating: 0, count: count))
        levels = Mutex([UInt8](repeating: 0, count: count))
    }
}
