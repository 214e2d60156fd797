import DBus
import Foundation

// bench-dbus: round-trip calls/s and latency through speakerd's D-Bus layer, beside the same
// loop written with raw libdbus-1 calls (the floor), against one private dbus-daemon and one
// raw-libdbus echo server. Rounds alternate floor/ours; medians over rounds are reported.
//
//   swift run -c release bench-dbus [--rounds N] [--calls N] [--markdown]

struct Figures {
    var callsPerSecond: Double
    var p50: Double
    var p99: Double
}

func figures(_ latencies: [Double], seconds: Double) -> Figures {
    let sorted = latencies.sorted()
    func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    return Figures(callsPerSecond: Double(latencies.count) / seconds, p50: percentile(0.5), p99: percentile(0.99))
}

func measure(_ body: () async throws -> [Double]) async rethrows -> Figures {
    let start = DispatchTime.now().uptimeNanoseconds
    let latencies = try await body()
    return figures(latencies, seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
    return value
}
let rounds = option("--rounds", 5)
let sequentialCalls = option("--calls", 20_000)
let pipelinedCalls = sequentialCalls * 4
let window = 64

let daemon = try PrivateDaemon()
defer { daemon.stop() }
let server = try RawLibdbus.startEchoServer(daemon.address)
let raw = try RawLibdbus.connect(daemon.address)
let ours = try await DBusConnection.connect(.address(daemon.address))

// Warm up both paths.
_ = RawLibdbus.blocking(raw, destination: server, calls: 2_000)
_ = try await Ours.sequential(ours, destination: server, calls: 2_000)

var results: [String: [Figures]] = [:]
for round in 1...rounds {
    results["floor-1", default: []].append(await measure { RawLibdbus.blocking(raw, destination: server, calls: sequentialCalls) })
    results["ours-1", default: []].append(try await measure { try await Ours.sequential(ours, destination: server, calls: sequentialCalls) })
    results["floor-64", default: []].append(await measure { RawLibdbus.pipelined(raw, destination: server, calls: pipelinedCalls, window: window) })
    results["ours-64", default: []].append(try await measure { try await Ours.concurrent(ours, destination: server, calls: pipelinedCalls, window: window) })
    FileHandle.standardError.write("round \(round)/\(rounds) done\n".data(using: .utf8)!)
}

// Idle cost: an open connection with nothing to do should use no CPU at all.
let idleStart = processCPUSeconds()
try await Task.sleep(for: .seconds(2))
let idleCPUms = (processCPUSeconds() - idleStart) * 1000

/// Throughput ratios are paired per round (floor and ours ran back to back), then the median
/// is taken, so load that drifts across rounds cancels out.
@MainActor func row(_ label: String, _ key: String, floorKey: String) -> String {
    let runs = results[key]!
    let ratios = zip(runs, results[floorKey]!).map { $0.callsPerSecond / $1.callsPerSecond }
    let rate = median(runs.map(\.callsPerSecond))
    return String(format: "| %@ | %.0f | %.1f | %.1f | %.2f× (%.2f–%.2f) |", label, rate, median(runs.map(\.p50)),
                  median(runs.map(\.p99)), median(ratios), ratios.min()!, ratios.max()!)
}

print("""
| path | calls/s | p50 µs | p99 µs | vs floor (min–max over rounds) |
|---|---|---|---|---|
\(row("raw libdbus, 1 in flight (send_with_reply_and_block)", "floor-1", floorKey: "floor-1"))
\(row("DBusConnection (DBus module).call, 1 in flight", "ours-1", floorKey: "floor-1"))
\(row("raw libdbus, \(window) in flight (pending calls)", "floor-64", floorKey: "floor-64"))
\(row("DBusConnection (DBus module).call, \(window) tasks in flight", "ours-64", floorKey: "floor-64"))

Medians of \(rounds) alternating rounds (ratio: median of per-round ratios); \(sequentialCalls) calls per 1-in-flight run, \(pipelinedCalls) per \(window)-in-flight run.
Idle: an open DBus-module connection used \(String(format: "%.1f", idleCPUms)) ms of CPU over 2 s idle (the whole process).
""")
RawLibdbus.close(raw)
ours.close()
