
// bench-readiness: the readiness gate beside the seeds' dispatch-queue pattern, one one-shot
// signal releasing 100,000 waiters, and the start-up sequencer's overhead per operation.
// Run in release: `swift run -c release bench-readiness [gate|signal|sequencer]`. Prints the
// Markdown section of docs/BENCHMARKS.md.

let runs = 15
let registrations = 100_000
/// `bench-readiness gate|signal|sequencer` runs one part; no argument runs all.
let parts = Set(CommandLine.arguments.dropFirst())
func wanted(_ part: String) -> Bool { parts.isEmpty || parts.contains(part) }

func ratio(_ baseline: Duration, _ ours: Duration) -> String { fixed(baseline.seconds / ours.seconds, 2) + "×" }

print("## Readiness and operations")
print()
print("Command: `swift run -c release bench-readiness` (all parts; or name one: `gate`, `signal`, `sequencer`).")
print("Medians of \(runs) runs (5 for the signal), compared side by side in one process. Each run is timed twice:")
print("CPU time of the process (all threads; steady even when other builds load the machine) and wall time.")
print()

if wanted("gate") {
    print("### Readiness gate: registrations + release")
    print()
    print("\(registrations) blocks, each incrementing a counter. *Deferred*: registered before the level is reached,")
    print("then released in order by one raise. *Immediate*: registered when the level is already reached (run at once).")
    print("Baseline: the seeds' pattern, a serial DispatchQueue guarding an array of labelled closures released in")
    print("order, each timed for slow-block warnings. Bare: the same queue and closures without labels or timing.")
    print()
    print("| case | gate (CPU/block) | baseline (CPU/block) | bare (CPU/block) | gate vs baseline, CPU | gate vs baseline, wall | gate vs bare, CPU |")
    print("|---|---|---|---|---|---|---|")
    let bench = GateBench(count: registrations, runs: runs)
    let cases = [
        ("deferred", bench.deferred()), ("immediate", bench.immediate()),
        ("deferred, `Int` levels", bench.deferredGeneric()),
    ]
    for (name, result) in cases {
        print("| \(name) | \(perItem(registrations, in: result.gate.cpu)) | \(perItem(registrations, in: result.baseline.cpu)) "
            + "| \(perItem(registrations, in: result.bare.cpu)) | \(ratio(result.baseline.cpu, result.gate.cpu)) "
            + "| \(ratio(result.baseline.wall, result.gate.wall)) | \(ratio(result.bare.cpu, result.gate.cpu)) |")
    }
    print()
}

if wanted("signal") {
    print("### One-shot signal: 100,000 waiters")
    print()
    print("100,000 tasks each awaiting one signal; one `succeed` releases them all.")
    print()
    let signal = await SignalBench(waiters: 100_000, runs: 5).run()
    print("| measure | wall | CPU | CPU per waiter |")
    print("|---|---|---|---|")
    for (name, sample) in [("start and park 100,000 tasks", signal.park), ("one `succeed` → all 100,000 resumed and finished", signal.release)] {
        print("| \(name) | \(fixed(sample.wall.seconds * 1e3, 1)) ms | \(fixed(sample.cpu.seconds * 1e3, 1)) ms | \(perItem(100_000, in: sample.cpu)) |")
    }
    print()
}

if wanted("sequencer") {
    print("### Start-up sequencer: overhead per operation")
    print()
    print("Graphs of no-op operations, so all the time is the sequencer's: validating the graph, starting each")
    print("operation's task as soon as its dependencies are done, booking outcomes, building the timeline.")
    print()
    print("| graph | operations | dependencies | CPU per op (validate + run) | CPU per op (run only) | wall per op (validate + run) | CPU per op, 10 s timeout each |")
    print("|---|---|---|---|---|---|---|")
    let bench = SequencerBench(runs: runs)
    for shape in SequencerBench.Shape.allCases {
        let plain = await bench.figures(shape, timeout: false)
        let timed = await bench.figures(shape, timeout: true)
        print("| \(shape.title) | \(plain.operations) | \(plain.edges) | \(perItem(1, in: plain.total.cpu)) "
            + "| \(perItem(1, in: plain.run.cpu)) | \(perItem(1, in: plain.total.wall)) | \(perItem(1, in: timed.total.cpu)) |")
    }
}
