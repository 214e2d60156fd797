import Readiness

/// Sequencer overhead per operation: graphs of no-op operations, so all time is the sequencer's
/// (validation, scheduling, task start, booking, timeline).
struct SequencerBench {
    let runs: Int

    enum Shape: CaseIterable {
        case chain, wide, layered

        var title: String {
            switch self {
            case .chain: "1,000-operation chain"
            case .wide: "wide: 1 → 1,000 parallel → 1"
            case .layered: "layered: 10 waves × 100, each depending on all of the wave before"
            }
        }

        func operations(timeout: Bool) -> [StartupOperation] {
            let t: Duration? = timeout ? .seconds(10) : nil
            switch self {
            case .chain:
                return (0..<1_000).map { i in
                    StartupOperation("op\(i)", after: i == 0 ? [] : ["op\(i - 1)"], timeout: t) { _ in }
                }
            case .wide:
                var ops = [StartupOperation("root", timeout: t) { _ in }]
                ops += (0..<1_000).map { i in StartupOperation("w\(i)", after: ["root"], timeout: t) { _ in } }
                ops.append(StartupOperation("sink", after: (0..<1_000).map { "w\($0)" }, timeout: t) { _ in })
                return ops
            case .layered:
                var ops: [StartupOperation] = []
                for wave in 0..<10 {
                    let previous = wave == 0 ? [] : (0..<100).map { "l\(wave - 1)_\($0)" }
                    ops += (0..<100).map { i in StartupOperation("l\(wave)_\(i)", after: previous, timeout: t) { _ in } }
                }
                return ops
            }
        }
    }

    struct Figures {
        let operations: Int
        let edges: Int
        /// Validating the graph and running it, per operation.
        let total: Sample
        /// Running it (the graph already validated), per operation.
        let run: Sample
    }

    /// Medians per operation for one shape, with or without per-operation timeouts (all
    /// timeouts share one timer on the clock).
    func figures(_ shape: Shape, timeout: Bool) async -> Figures {
        let sample = shape.operations(timeout: timeout)
        let edges = sample.reduce(0) { $0 + $1.step.dependencies.count }
        var totals: [Sample] = [], runsOnly: [Sample] = []
        for round in 0...runs {
            let operations = shape.operations(timeout: timeout)
            let clock = ContinuousClock()
            let (start, startCPU) = (clock.now, processCPUTime())
            let sequencer = try! StartupSequencer(shape.title, operations: operations, defaultTimeout: nil)
            let (validated, validatedCPU) = (clock.now, processCPUTime())
            let timeline = await sequencer.run()
            let (end, endCPU) = (clock.now, processCPUTime())
            precondition(timeline.allSucceeded)
            if round > 0 {
                totals.append(Sample(wall: start.duration(to: end), cpu: endCPU - startCPU))
                runsOnly.append(Sample(wall: validated.duration(to: end), cpu: endCPU - validatedCPU))
            }
        }
        return Figures(
            operations: sample.count, edges: edges,
            total: perOperation(medians(totals), sample.count),
            run: perOperation(medians(runsOnly), sample.count)
        )
    }

    private func perOperation(_ sample: Sample, _ count: Int) -> Sample {
        Sample(wall: sample.wall / count, cpu: sample.cpu / count)
    }
}
