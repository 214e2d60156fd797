@testable import BlueZ
import Clocks
@testable import Daemon
import Foundation
@testable import SpeakerdAPI
import Synchronization
import TestSupport
import Testing

/// Scans through the daemon, on a fake BlueZ and a test clock whose scan lasts 50 ms
/// (`InProcessDaemon`): the wiring of ``ScanSharing``, whose decisions `ScanSharingTests` covers.
@Suite("Concurrent scans share one discovery")
struct ConcurrentScanTests {
    static let adapterAddress = try! BluetoothAddress("00:01:02:03:04:05")
    static let scanDuration = Duration.milliseconds(50)

    static func world() async throws -> (InProcessDaemon, FakeBlueZClient) {
        let flip = Device(address: try BluetoothAddress(DaemonWorld.flip.address), adapterName: "hci0", name: "JBL Flip 5",
                          deviceClass: 0x240414, paired: true, trusted: true, uuids: [BlueZUUID.a2dpSink])
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: adapterAddress, powered: true, powerState: .on)], devices: [flip])
        return (try await InProcessDaemon.start(on: bluez), bluez)
    }

    static func discoveries(_ bluez: FakeBlueZClient) async -> Int {
        await bluez.calls.filter { if case .startDiscovery = $0 { true } else { false } }.count
    }

    /// How many scans have answered.
    final class Answers: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// `count` scans asked at once; `answered` counts those that have answered.
    static func scans(_ count: Int, on daemon: SpeakerdDaemon, answered: Answers) -> [Task<ScanReport, any Error>] {
        (0..<count).map { _ in
            Task {
                defer { answered.add() }
                return try await daemon.scan()
            }
        }
    }

    @Test("a scan whose client leaves stops waiting at once, and the discovery nobody waits for any more is stopped at BlueZ")
    func aLeavingScanStopsTheDiscovery() async throws {
        let (world, bluez) = try await Self.world()
        let daemon = world.daemon
        let before = await Self.discoveries(bluez)
        let scan = Task { try await daemon.scan() }
        try await eventually("the discovery has started") { await Self.discoveries(bluez) == before + 1 }
        let stopsBefore = await bluez.calls.count { if case .stopDiscovery = $0 { true } else { false } }
        scan.cancel()
        await #expect(throws: (any Error).self) { try await scan.value }
        try await eventually("the abandoned discovery is stopped") {
            await bluez.calls.count { if case .stopDiscovery = $0 { true } else { false } } > stopsBefore
        }
        await daemon.shutdown()
        world.startup.cancel()
    }

    @Test("a connect asked while sixteen scans wait is not held behind them")
    func connectIsNotDelayedByScans() async throws {
        let (world, bluez) = try await Self.world()
        let daemon = world.daemon
        _ = try await daemon.disconnect()
        let answered = Answers()
        let scans = Self.scans(16, on: daemon, answered: answered)
        try await eventually("the discovery has started") { await Self.discoveries(bluez) >= 1 }

        // No test-clock time passes: the connect must not need any scan to end first.
        let status = try await daemon.connect(nil)
        #expect(status.speaker?.connected == true)
        #expect(answered.value == 0, "the scans still run")
        scans.forEach { $0.cancel() }
        await daemon.shutdown()
        world.startup.cancel()
    }

    @Test("scan --duration: a scan asked for a second lasts a second on the clock, not scan_seconds")
    func scanForASecond() async throws {
        let (world, bluez) = try await Self.world()
        let (daemon, clock) = (world.daemon, world.clock)
        let before = await Self.discoveries(bluez)
        let answered = Answers()
        let scan = Task { defer { answered.add() }; return try await daemon.scan(seconds: 1) }
        try await eventually("the discovery has started") { await Self.discoveries(bluez) == before + 1 }
        let took = try await clock.advance(by: .milliseconds(10), atMost: .seconds(2), until: "the scan answers") {
            answered.value == 1
        }
        #expect(took >= .seconds(1) && took < .seconds(1) + Self.scanDuration, "a 1 s scan answered after \(took)")
        #expect(try await scan.value.candidates.map(\.address) == [DaemonWorld.flip.address])
        await #expect(throws: SpeakerdError.self) { try await daemon.scan(seconds: 0) }
        await #expect(throws: SpeakerdError.self) { try await daemon.scan(seconds: ScanLength.seconds.upperBound + 1) }
        await daemon.shutdown()
        world.startup.cancel()
    }
}
