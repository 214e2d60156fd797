import AsyncSignals
import Foundation
import Glibc
import SpeakerdAPI
import Synchronization
import Testing
import TestSupport
@testable import Daemon

/// systemd stops speakerd with SIGTERM on every shutdown and restart; an idle daemon must be
/// gone at once, with what it knows on disk.
@Suite("SIGTERM: an idle speakerd exits promptly with its state written", .serialized)
struct ShutdownTimingTests {
    /// Runs the real speakerd (null output) on `fake` remembering the Flip; `body` gets to the
    /// moment to stop it, then SIGTERM goes out. Returns the run and the time from the signal to
    /// the exit. Under the leak check, LeakSanitizer scans the heap at exit (seconds): that is the
    /// sanitizer's time, not speakerd's, so the measured speakerd skips it.
    func stopped(_ fake: DaemonWorld, when body: @escaping @Sendable (SpeakerdDBusClient) async throws -> Void)
        async throws -> (run: ExecutableRun, elapsed: Duration) {
        let state = fake.state
        state.write("", to: "speakerd.conf")
        let sent = Mutex<ContinuousClock.Instant?>(nil)
        let sanitizer = ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { ["ASAN_OPTIONS": $0 + ":detect_leaks=0"] } ?? [:]
        let run = try await ExecutableRun.run(
            "speakerd", ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", fake.world.address,
                         "--audio-output", "null"], environment: sanitizer
        ) { pid in
            try await body(try await fake.client())
            sent.withLock { $0 = .now }
            kill(pid, SIGTERM)
        }
        return (run, ContinuousClock.now - (try #require(sent.withLock { $0 })))
    }

    @Test("the real speakerd, connected and idle, exits promptly on SIGTERM, status 0, state.json listing the speaker")
    func idleExitIsPrompt() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let (run, elapsed) = try await stopped(fake) { client in
            try await eventually("speakerd is connected and ready", within: .seconds(30)) {
                (try? await client.status().readiness) == "playbackReady"
            }
            try await Task.sleep(for: .milliseconds(300))  // idle: nothing in flight
        }
        #expect(run.status == 0, "\(run.standardError)")
        // The product's bound is 300 ms, and it is measured where speed is, in a release build
        // on its own (scripts/bench-startup's "SIGTERM → exit" row: 3.3 ms median, docs/BENCHMARKS.md).
        // Here a debug build exits among a parallel test group on two cores, and this test's own
        // wait for the exit is part of the figure (303–444 ms seen under load): it checks that the
        // exit is prompt, well clear of the 1.2–2 s a stuck shutdown took before it was fixed, as
        // the AddressSanitizer run always did.
        #expect(elapsed < .seconds(1), "speakerd took \(elapsed) to exit")
        #expect(try fake.rememberedAddresses() == [DaemonWorld.flip.address])
    }

    @Test("the real speakerd exits promptly on SIGTERM whatever it waits on: a Connect BlueZ never answers, a play waiting for that speaker")
    func exitWhileWaiting() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        try await fake.setConnectBehavior(DaemonWorld.flip, "hang")
        let song = try GatedPlayEndToEndTests.song()
        let address = fake.world.address
        let player = Mutex<Task<ExecutableRun, any Error>?>(nil)
        let (run, elapsed) = try await stopped(fake) { client in
            try await eventually("speakerd pages the speaker, which never answers", within: .seconds(30)) {
                guard (try? await client.status()) != nil else { return false }
                return try await fake.calls("Connect", on: DaemonWorld.flip) >= 1
            }
            player.withLock { $0 = Task { try await ExecutableRun.run("composer-cli", ["play", song, "--bus", address]) } }
            try await eventually("the play waits for the speaker") { try await client.status().playback.state == "waiting" }
        }
        #expect(run.status == 0, "\(run.standardError)")
        #expect(elapsed < .seconds(1), "speakerd took \(elapsed) to exit with a Connect and a play in flight")
        // The waiting client is told, in one line, and fails.
        let played = try await #require(player.withLock { $0 }).value
        #expect(played.status != 0 && played.standardError.split(separator: "\n").count == 1, "\(played.standardError)")
    }
}
