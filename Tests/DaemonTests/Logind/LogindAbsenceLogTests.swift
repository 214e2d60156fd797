import Logging
@testable import Readiness
@testable import Daemon
import Logind
import Synchronization
@testable import Systemd
import TestSupport
import Testing

/// A machine without logind: every connect makes the queue busy, and each busy retries logind.
/// The log says so once, not once per connect (the probe saw 2,003 lines over 2,000 cycles).
@Suite("No logind: said once")
struct LogindAbsenceLogTests {
    @Test("twenty busy/drained cycles without logind log 'no logind on the bus' once")
    func saidOnce() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let lines = Journal()
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { line in lines.withLock { $0.append(line) } } }
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await world.connect()), logger: logger)
        for _ in 0..<20 {
            await inhibitor.handle(QueueEvent.busy)
            guard case .unavailable = await inhibitor.state else {
                Issue.record("expected logind to be unavailable, got \(await inhibitor.state)")
                return
            }
            await inhibitor.handle(QueueEvent.drained)
        }
        let said = lines.withLock { $0 }.filter { $0.contains("no logind on the bus") }
        #expect(said.count == 1, "\(said)")
        _ = world
    }
}
