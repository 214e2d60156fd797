@testable import BlueZ
import Clocks
@testable import Daemon
import Foundation
@testable import SpeakerdAPI
import Synchronization
import TestSupport
import Testing

/// Several people scanning at once (`composer-cli scan` from two users' sessions): the scans
/// share the discovery that runs instead of queueing one behind another. Seen before: sixteen
/// concurrent scans answered at 10, 20, … 160 s, and another user's scan gave up after 120 s.
/// On a fake BlueZ and a test clock whose scan lasts 50 ms (`InProcessDaemon`).
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

    @Test("sixteen scans asked together run one discovery, and every one answers with its candidates when it ends, within one scan's duration")
    func sixteenScansShareOneDiscovery() async throws {
        let (world, bluez) = try await Self.world()
        let (daemon, clock) = (world.daemon, world.clock)
        let before = await Self.discoveries(bluez)
        let answered = Answers()
        let scans = Self.scans(16, on: daemon, answered: answered)
        try await eventually("all sixteen wait for the discovery") { await daemon.sharedDiscovery.waiting == 16 }
        try await eventually("the discovery has started") { await Self.discoveries(bluez) == before + 1 }

        // One scan's duration (give or take the steps the discovery's timer may start after):
        // sixteen scans one after another would take sixteen.
        let took = try await clock.advance(by: .milliseconds(10), atMost: .seconds(1), until: "every scan answers") {
            answered.value == 16
        }
        #expect(took < Self.scanDuration * 2, "the last scan answered after \(took) of a \(Self.scanDuration) scan")
        for scan in scans {
            #expect(try await scan.value.candidates.map { $0.address } == [DaemonWorld.flip.address])
        }
        #expect(await Self.discoveries(bluez) == before + 1, "one discovery for all sixteen")
        await daemon.shutdown()
        world.startup.cancel()
    }

    @Test("a scan asked while another runs answers when that one ends, not a whole scan later")
    func aLateScanJoinsTheRunningOne() async throws {
        let (world, bluez) = try await Self.world()
        let (daemon, clock) = (world.daemon, world.clock)
        let before = await Self.discoveries(bluez)
        let answered = Answers()
        let first = Self.scans(1, on: daemon, answered: answered)
        try await eventually("the first scan's discovery runs") { await Self.discoveries(bluez) == before + 1 }
        await clock.advance(by: .milliseconds(30))
        let second = Self.scans(1, on: daemon, answered: answered)
        try await eventually("the second scan joins it") { await daemon.sharedDiscovery.waiting == 2 }

        let took = try await clock.advance(by: .milliseconds(10), atMost: .seconds(1), until: "both answer") {
            answered.value == 2
        }
        #expect(took < Self.scanDuration, "the second scan answered \(took) after it joined a scan with 20 ms left")
        _ = try await first[0].value
        _ = try await second[0].value
        #expect(await Self.discoveries(bluez) == before + 1)
        await daemon.shutdown()
        world.startup.cancel()
    }

    @Test("a scan whose client leaves stops waiting at once; the others still get the candidates, and the discovery stops once all have left")
    func leavingScansDoNotHoldTheOthers() async throws {
        let (world, bluez) = try await Self.world()
        let (daemon, clock) = (world.daemon, world.clock)
        let answered = Answers()
        let scans = Self.scans(3, on: daemon, answered: answered)
        try await eventually("all three wait for the discovery") { await daemon.sharedDiscovery.waiting == 3 }

        scans[0].cancel()
        await #expect(throws: (any Error).self) { try await scans[0].value }
        #expect(await daemon.sharedDiscovery.waiting == 2)
        _ = try await clock.advance(by: .milliseconds(10), atMost: .seconds(1), until: "the other two answer") {
            answered.value == 3
        }
        #expect(try await scans[1].value.candidates.count == 1)
        #expect(try await scans[2].value.candidates.count == 1)

        // Everyone leaves a discovery: it stops (BlueZ is told) instead of running on for nobody.
        let stopsBefore = await bluez.calls.filter { if case .stopDiscovery = $0 { true } else { false } }.count
        let abandoned = Self.scans(2, on: daemon, answered: answered)
        try await eventually("both wait for a new discovery") { await daemon.sharedDiscovery.waiting == 2 }
        try await eventually("the new discovery has started") {
            await bluez.calls.filter { if case .startDiscovery = $0 { true } else { false } }.count >= 2
        }
        abandoned.forEach { $0.cancel() }
        for scan in abandoned { await #expect(throws: (any Error).self) { try await scan.value } }
        try await eventually("the abandoned discovery is stopped") {
            await bluez.calls.count { if case .stopDiscovery = $0 { true } else { false } } > stopsBefore
        }
        await daemon.shutdown()
        world.startup.cancel()
    }

    @Test("a connect asked while sixteen scans wait is not held behind them")
    func connectIsNotDelayedByScans() async throws {
        let (world, _) = try await Self.world()
        let daemon = world.daemon
        _ = try await daemon.disconnect()
        let answered = Answers()
        let scans = Self.scans(16, on: daemon, answered: answered)
        try await eventually("all sixteen wait for the discovery") { await daemon.sharedDiscovery.waiting == 16 }

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

    @Test("a longer scan joining a short one keeps the discovery going: the short one answers at its own end, the long one at its end with the speaker switched on meanwhile")
    func aLongerScanExtendsTheDiscovery() async throws {
        let (world, bluez) = try await Self.world()
        let (daemon, clock) = (world.daemon, world.clock)
        let before = await Self.discoveries(bluez)
        let shortAnswered = Answers(), longAnswered = Answers()
        let short = Self.scans(1, on: daemon, answered: shortAnswered)[0]
        try await eventually("the short scan's discovery runs") { await Self.discoveries(bluez) == before + 1 }
        await clock.advance(by: .milliseconds(20))
        let long = Task { defer { longAnswered.add() }; return try await daemon.scan(seconds: 1) }
        try await eventually("the long scan joins it") { await daemon.sharedDiscovery.waiting == 2 }

        let shortTook = try await clock.advance(by: .milliseconds(10), atMost: .seconds(1), until: "the short scan answers") {
            shortAnswered.value == 1
        }
        #expect(shortTook < Self.scanDuration, "the short scan waited \(shortTook) more, past its own end")
        #expect(try await short.value.candidates.map(\.address) == [DaemonWorld.flip.address])
        #expect(longAnswered.value == 0, "the long scan answered at the short one's end")
        let stops = await bluez.calls.count { if case .stopDiscovery = $0 { true } else { false } }

        // A speaker switched on while the long scan runs is in its answer.
        let bose = Device(address: try BluetoothAddress("22:33:44:BB:CC:DD"), adapterName: "hci0", name: "Bose Mini",
                          deviceClass: 0x240414, uuids: [BlueZUUID.a2dpSink], rssi: -60)
        await bluez.addDevice(bose)
        _ = try await clock.advance(by: .milliseconds(10), atMost: .seconds(2), until: "the long scan answers") {
            longAnswered.value == 1
        }
        #expect(Set(try await long.value.candidates.map(\.address)) == [DaemonWorld.flip.address, bose.address.description])
        #expect(await Self.discoveries(bluez) == before + 1, "one discovery, kept going for the long scan")
        #expect(await bluez.calls.count { if case .stopDiscovery = $0 { true } else { false } } > stops,
                "the discovery stops once the long scan ends")
        await daemon.shutdown()
        world.startup.cancel()
    }
}
