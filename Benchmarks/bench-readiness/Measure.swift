#if canImport(Glibc)
import Glibc
#endif

/// Timing helpers: every figure is the median of several runs. Each run is measured twice: wall
/// time on the monotonic clock, and this process's CPU time (all threads). The machines these
/// run on are shared by several builds at once, so wall time swings with their load; CPU time
/// is what our code itself costs and is the steadier figure to compare.

/// Wall and CPU time of one run.
struct Sample {
    var wall: Duration
    var cpu: Duration
}

/// The process's CPU time so far, all threads.
func processCPUTime() -> Duration {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return .seconds(Int64(spec.tv_sec)) + .nanoseconds(Int64(spec.tv_nsec))
}

/// Measures `body`'s wall and CPU time.
func measure(_ body: () -> Void) -> Sample {
    let clock = ContinuousClock()
    let cpuStart = processCPUTime()
    let start = clock.now
    body()
    return Sample(wall: start.duration(to: clock.now), cpu: processCPUTime() - cpuStart)
}

/// Medians of wall and CPU time, each taken separately.
func medians(_ samples: [Sample]) -> Sample {
    let wall = samples.map(\.wall).sorted()
    let cpu = samples.map(\.cpu).sorted()
    return Sample(wall: wall[wall.count / 2], cpu: cpu[cpu.count / 2])
}

/// Runs `body` once to warm up, then `runs` times, and returns the median duration.
func median(runs: Int, _ body: () -> Duration) -> Duration {
    _ = body()
    var samples = (0..<runs).map { _ in body() }
    samples.sort()
    return samples[samples.count / 2]
}

/// The async flavour of ``median(runs:_:)``.
func median(runs: Int, _ body: () async -> Duration) async -> Duration {
    _ = await body()
    var samples: [Duration] = []
    for _ in 0..<runs { samples.append(await body()) }
    samples.sort()
    return samples[samples.count / 2]
}

/// Measures `body` on the continuous clock.
func time(_ body: () -> Void) -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    body()
    return start.duration(to: clock.now)
}

extension Duration {
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    var nanoseconds: Double { seconds * 1e9 }
}

/// Formats a rate like "12.3 M/s".
func rate(_ count: Int, in duration: Duration) -> String {
    let perSecond = Double(count) / duration.seconds
    if perSecond >= 1e6 { return "\(fixed(perSecond / 1e6, 2)) M/s" }
    return "\(fixed(perSecond / 1e3, 0)) k/s"
}

/// Formats nanoseconds per item like "84 ns".
func perItem(_ count: Int, in duration: Duration) -> String {
    let nanoseconds = duration.nanoseconds / Double(count)
    if nanoseconds >= 1_000 { return "\(fixed(nanoseconds / 1_000, 2)) µs" }
    return "\(fixed(nanoseconds, 0)) ns"
}

/// A volatile-ish sink so the optimiser cannot drop the benchmarked blocks.
final class Counter: @unchecked Sendable {
    var value = 0
}

/// `value` with `digits` decimals, without Foundation's `String(format:)`.
func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (value * scale).rounded()
    let whole = Int(scaled / scale)
    guard digits > 0 else { return "\(whole)" }
    let fraction = Int(abs(scaled) - abs(Double(whole)) * scale)
    let padded = String(repeating: "0", count: max(0, digits - "\(fraction)".count)) + "\(fraction)"
    return "\(whole).\(padded)"
}
