import AsyncSignals
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The real speakerd process under a stand-in systemd: `NOTIFY_SOCKET` bound by the test,
/// `WATCHDOG_USEC` set, and `WATCHDOG_PID` set to speakerd's own pid the way systemd does it
/// (a shell sets it to `$$` and execs speakerd, which keeps that pid).
@Suite("speakerd's watchdog and STATUS= lines under a stand-in systemd", .serialized)
struct WatchdogProcessTests {
    static let flip = DaemonWorld.flip

    /// One datagram and when it arrived.
    struct Arrival: Sendable {
        let message: String
        let at: ContinuousClock.Instant
    }

    /// Reads datagrams as they come (every 5 ms), stamping each, until `done` says enough.
    func collect(_ listener: NotifySocketListener, within limit: Duration,
                 until done: ([Arrival]) -> Bool) async throws -> [Arrival] {
        var arrivals: [Arrival] = []
        let deadline = ContinuousClock.now + limit
        while !done(arrivals), ContinuousClock.now < deadline {
            let now = ContinuousClock.now
            arrivals += listener.receiveAll().map { Arrival(message: $0, at: now) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return arrivals
    }

    static func statusLines(_ arrivals: [Arrival]) -> [String] {
        arrivals.flatMap { $0.message.split(separator: "\n") }.filter { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst(7)) }
    }

    @Test("WATCHDOG=1 arrives at half of WATCHDOG_USEC, and start-up's STATUS= lines are sentences a person can read")
    func watchdogAndStatusLines() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        fake.state.write("", to: "speakerd.conf")
        let listener = NotifySocketListener(path: fake.state.path + "/notify")
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        let watchdogUsec = 600_000  // pings every 300 ms
        let run = try await ExecutableRun.run(
            program: "/bin/sh",
            ["-c", #"WATCHDOG_PID=$$ exec "$0" "$@""#, speakerd,
             "--config", fake.state.path + "/speakerd.conf", "--state-dir", fake.state.path, "--bus", fake.world.address,
             "--audio-output", "null", "--soundfont", "/usr/share/sounds/sf2/TimGM6mb.sf2"],
            environment: ["NOTIFY_SOCKET": listener.notifySocket, "WATCHDOG_USEC": String(watchdogUsec)]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            let arrivals = try await collect(listener, within: .seconds(20)) { arrivals in
                arrivals.filter { $0.message.contains("WATCHDOG=1") }.count >= 9
                    && Self.statusLines(arrivals).contains("Ready: JBL Flip 5")
            }
            let pings = arrivals.filter { $0.message.split(separator: "\n").contains("WATCHDOG=1") }.map(\.at)
            #expect(pings.count >= 9, "only \(pings.count) WATCHDOG=1 in 20 s")
            // The pace over the whole run, not the median gap between reads: on a loaded machine
            // this reader is starved now and then and reads several pings at once, stamped
            // alike (a median of such gaps once came out below 220 ms). The span from the first
            // ping to the last is off by at most one starvation, shared by all its gaps.
            if let first = pings.first, let last = pings.last, pings.count >= 2 {
                let pace = (last - first) / (pings.count - 1)
                // Half of 600 ms is 300 ms; the full timeout would be 600 ms.
                #expect(pace >= .milliseconds(220) && pace <= .milliseconds(450), "mean ping interval \(pace) over \(pings.count) pings")
            }

            let lines = Self.statusLines(arrivals)
            let ready = arrivals.firstIndex { $0.message.split(separator: "\n").contains("READY=1") }
            #expect(ready != nil, "speakerd never said READY=1")
            #expect(lines.firstIndex(of: "Connecting to JBL Flip 5…").map { connecting in
                lines.firstIndex(of: "Ready: JBL Flip 5").map { connecting < $0 } ?? false
            } == true, "status lines: \(lines)")
            for line in lines {
                #expect(line.first?.isUppercase == true, "'\(line)' does not read as a sentence")
                #expect(line.split(separator: " ").count >= 2 || line.hasSuffix("…"), "'\(line)' is not a sentence")
            }
            #expect(!lines.contains { $0.contains("speakerConnected") || $0.contains("playbackReady") })
        }
        #expect(run.status == 0, "speakerd did not stop cleanly: \(run.standardError)")
        #expect(listener.receiveAll().contains { $0.hasPrefix("STOPPING=1") })
    }

    @Test("a WATCHDOG_PID naming another process is not speakerd's watchdog: no WATCHDOG=1 is sent")
    func watchdogForAnotherProcess() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        fake.state.write("", to: "speakerd.conf")
        let listener = NotifySocketListener(path: fake.state.path + "/notify")
        let run = try await ExecutableRun.run(
            "speakerd",
            ["--config", fake.state.path + "/speakerd.conf", "--state-dir", fake.state.path, "--bus", fake.world.address,
             "--audio-output", "null"],
            environment: ["NOTIFY_SOCKET": listener.notifySocket, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            // Runs until start-up is under way; everything sent in its whole life is checked after it exits.
            let arrivals = try await collect(listener, within: .seconds(20)) { arrivals in
                Self.statusLines(arrivals).contains("Connecting to JBL Flip 5…")
            }
            #expect(arrivals.contains { $0.message.split(separator: "\n").contains("READY=1") })
            #expect(!arrivals.contains { $0.message.contains("WATCHDOG=1") })
        }
        #expect(run.status == 0, "speakerd did not stop cleanly: \(run.standardError)")
        #expect(!listener.receiveAll().contains { $0.contains("WATCHDOG=1") })
    }
}
