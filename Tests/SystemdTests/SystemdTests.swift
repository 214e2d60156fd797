import Clocks
import Foundation
import Logging
import Synchronization
@testable import Systemd
import TestSupport
import Testing

@Suite("systemd notification, watchdog and journal logging")
struct SystemdTests {
    @Test("READY=1 with its STATUS arrives in one datagram on a path socket")
    func readyAndStatusOnPathSocket() throws {
        let directory = TemporaryDirectory()
        let listener = NotifySocketListener(path: directory.path + "/notify")
        let notifier = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.notifySocket]))
        try notifier.send([.ready, .status("Connecting to JBL Flip 5…")])
        try notifier.send(.stopping)
        #expect(listener.receiveAll() == ["READY=1\nSTATUS=Connecting to JBL Flip 5…", "STOPPING=1"])
    }

    @Test("an '@' NOTIFY_SOCKET reaches the abstract namespace")
    func abstractSocket() throws {
        let listener = NotifySocketListener(abstractName: "speakerd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let notifier = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.notifySocket]))
        try notifier.send(.watchdog)
        #expect(listener.receiveAll() == ["WATCHDOG=1"])
    }

    @Test("a status with a newline cannot inject a second assignment")
    func statusNewlinesFlattened() {
        #expect(NotifyMessage.status("Waiting\nREADY=1").assignment == "STATUS=Waiting READY=1")
    }

    @Test("outside systemd there is nothing to notify; a bad NOTIFY_SOCKET is a clear error")
    func noSocket() throws {
        #expect(try SystemdNotifier(environment: [:]) == nil)
        #expect(throws: SystemdNotifyError.invalidSocket("relative/path")) {
            try SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/path"])
        }
        let gone = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify"]))
        let error = #expect(throws: SystemdNotifyError.self) { try gone.send(.ready) }
        #expect(error?.description == "cannot notify systemd: No such file or directory")
    }

    @Test("a notification socket nobody reads fills up and then fails at once: the sender is never parked in sendto")
    func fullSocketNeverBlocks() throws {
        let directory = TemporaryDirectory()
        let listener = NotifySocketListener(path: directory.path + "/notify")
        let notifier = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.notifySocket]))
        // The kernel queues only net.unix.max_dgram_qlen datagrams (10 by default) for a reader
        // that does not read; a blocking send would hang this test right there.
        var failure: SystemdNotifyError?
        for _ in 0..<10_000 where failure == nil {
            do { try notifier.send(.watchdog) } catch { failure = error }
        }
        #expect(failure?.description == "cannot notify systemd: its notification socket is full (nothing is reading it)")
        #expect(listener.receiveAll().contains("WATCHDOG=1"), "the datagrams sent before it filled up arrived")
    }

    @Test("the watchdog is paced at half of WATCHDOG_USEC, only for our own PID")
    func watchdogSettings() {
        let settings = WatchdogSettings(environment: ["WATCHDOG_USEC": "10000000"], processID: 42)
        #expect(settings?.pingInterval == .seconds(5))
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "42"], processID: 42) != nil)
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "7"], processID: 42) == nil)
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "soon"], processID: 42) == nil)
        #expect(WatchdogSettings(environment: [:], processID: 42) == nil)
    }

    @Test("the pacer pings through the socket on the injected clock and stops when cancelled")
    func pacerPingsOnClock() async throws {
        let directory = TemporaryDirectory()
        let listener = NotifySocketListener(path: directory.path + "/notify")
        let notifier = try SystemdNotifier(destination: .path(listener.notifySocket))
        let clock = TestClock()
        let heartbeats = Mutex(0)
        let pacer = WatchdogPacer(settings: WatchdogSettings(timeout: .seconds(10)), clock: clock,
                                  notifier: notifier, logger: Logger(label: "test")) { heartbeats.withLock { $0 += 1 } }
        let task = Task { try await pacer.run() }
        await clock.advance(by: .seconds(0))
        #expect(await waitFor { listener.receivedCount(adding: 0) >= 1 })
        // A ping arrives before the pacer sleeps again, and its sleep counts from whatever the
        // clock says then: each step waits for that sleep, or under load time would move first.
        #expect(try await sleeperWaits(on: clock))
        await clock.advance(by: .seconds(5))
        #expect(await waitFor { listener.receivedCount(adding: 0) >= 2 })
        #expect(try await sleeperWaits(on: clock))
        await clock.advance(by: .seconds(4))
        #expect(listener.receivedCount(adding: 0) == 2, "no ping before the interval is over")
        await clock.advance(by: .seconds(1))
        #expect(await waitFor { listener.receivedCount(adding: 0) >= 3 })
        task.cancel()
        try await task.value
        #expect(listener.pending == ["WATCHDOG=1", "WATCHDOG=1", "WATCHDOG=1"])
        #expect(heartbeats.withLock { $0 } == 3)
    }

    @Test("a stalled heartbeat means no ping, so systemd would restart the daemon")
    func stalledHeartbeatWithholdsPing() async throws {
        let pings = Mutex(0)
        let gate = AsyncStream<Void>.makeStream()
        let pacer = WatchdogPacer(settings: WatchdogSettings(timeout: .seconds(2)), clock: TestClock(),
                                  heartbeat: { for await _ in gate.stream { return } },
                                  ping: { pings.withLock { $0 += 1 } })
        let task = Task { try await pacer.run() }
        await Task.yield()
        #expect(pings.withLock { $0 } == 0)
        gate.continuation.yield()
        #expect(await waitFor { pings.withLock { $0 } == 1 })
        task.cancel()
        gate.continuation.finish()
        _ = try? await task.value
    }

    @Test("log lines carry journald priority prefixes and stay on one line")
    func journalPrefixes() {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { line in lines.withLock { $0.append(line) } } }
        logger.logLevel = .debug
        logger.error("speaker lost")
        logger.warning("retrying")
        logger.notice("connected")
        logger.info("ready", metadata: ["speaker": "11:22:33:AA:BB:CC"])
        logger.debug("two\nlines")
        logger.trace("hidden")
        #expect(lines.withLock { $0 } == [
            "<3>speakerd: speaker lost\n",
            "<4>speakerd: retrying\n",
            "<5>speakerd: connected\n",
            "<6>speakerd: ready speaker=11:22:33:AA:BB:CC\n",
            "<7>speakerd: two lines\n",
        ])
        #expect(JournalLogHandler.priority(of: .critical) == 2)
    }

    @Test("stderr is the journal only when JOURNAL_STREAM names stderr itself: an inherited or malformed one is not")
    func journalStreamMustNameStandardError() {
        let stderr = JournalLogHandler.FileIdentity(device: 25, inode: 4_096)
        #expect(JournalLogHandler.isJournal(["JOURNAL_STREAM": "25:4096"], standardError: stderr))
        // A shell started under a unit hands the variable on; speakerd's stderr is then its terminal.
        #expect(!JournalLogHandler.isJournal(["JOURNAL_STREAM": "8:1"], standardError: stderr))
        #expect(!JournalLogHandler.isJournal(["JOURNAL_STREAM": "25:4097"], standardError: stderr))
        for malformed in ["", "25", "25:", ":4096", "25:4096:1", "x:y", "-25:4096"] {
            #expect(!JournalLogHandler.isJournal(["JOURNAL_STREAM": malformed], standardError: stderr), "\(malformed)")
        }
        #expect(!JournalLogHandler.isJournal([:], standardError: stderr))
        #expect(!JournalLogHandler.isJournal(["JOURNAL_STREAM": "25:4096"], standardError: nil), "stderr closed")
    }
}

/// Whether something (the pacer, between pings) is asleep on `clock`, waiting a bounded number of
/// scheduler turns for it; `checkSuspension()` throws exactly when a sleep is pending.
func sleeperWaits(on clock: TestClock<Duration>) async throws -> Bool {
    for _ in 0..<1_000 {
        do { try await clock.checkSuspension() } catch is SuspensionError { return true }
    }
    return false
}

/// Waits (by yielding, not sleeping on time) until a condition another task makes true holds.
func waitFor(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}
