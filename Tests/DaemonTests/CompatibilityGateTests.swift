import Clocks
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The compatibility gate's other conditions (no BlueZ is in DaemonIntegrationTests): the status
/// says why start-up cannot go on, the API keeps answering, and when the condition clears the
/// same daemon resumes and connects its speaker, with no restart.
@Suite("speakerd's compatibility gate: no adapter, rfkill", .serialized)
struct CompatibilityGateTests {
    static let flip = DaemonWorld.flip

    @Test("no adapter: the status asks for one, and plugging it in resumes start-up and connects the speaker")
    func noAdapterThenPluggedIn() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        fake.remember([Self.flip])
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()
        try await fake.expectBlocked(daemon, saying: "Waiting for a Bluetooth adapter to be plugged in")
        #expect(await daemon.startupTimeline?.abortReason != nil)

        // The adapter is plugged in; bluetoothd lists the paired speaker on it.
        try await fake.addAdapter()
        try await fake.addSpeaker()
        try await fake.expectResumesAndConnects(daemon, clock)
        #expect(try await daemon.status().speaker?.connected == true)

        // `startup` shows the boot's run (stopped for want of an adapter) beside the one that
        // followed, with why it ran; not the later run alone.
        try await eventually("the second start-up has ended") { (try? await daemon.startup())?.run == 2 }
        let report = try await daemon.startup()
        #expect(report.reason == "adapter hci0 appeared")
        #expect(report.runHeading.hasPrefix("Start-up run 2, "), "\(report.runHeading)")
        let boot = try #require(report.bootRun, "the boot's run is gone")
        #expect(boot.run == 1 && boot.bootRun == nil)
        #expect(boot.operations.contains { $0.name == "adapter" && $0.outcome == "failed" }, "\(boot.operations)")
        #expect(report.operations.contains { $0.name == "adapter" && $0.outcome == "ok" }, "\(report.operations)")
        #expect(report.humanReadableWithBoot.hasPrefix("Start-up at boot:\n"))
        #expect(report.humanReadableWithBoot.contains("\n\nStart-up run 2, "))
        await daemon.shutdown()
    }

    @Test("an rfkill-blocked adapter: the status says how to unblock it, and unblocking powers it and connects the speaker")
    func rfkillBlockedThenUnblocked() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        try await fake.mock("SetPowerState", .string("hci0"), .string("off-blocked"))
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()
        try await fake.expectBlocked(daemon, saying: "Bluetooth adapter hci0 is blocked by rfkill; run 'rfkill unblock bluetooth'")
        #expect(try await fake.calls("Connect") == 0)

        // `rfkill unblock bluetooth`: the adapter is off but can be powered again.
        try await fake.mock("SetPowerState", .string("hci0"), .string("off"))
        try await fake.expectResumesAndConnects(daemon, clock)
        let powered = try await fake.control.call(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.bluez.Adapter1"), .string("Powered")])
        #expect(powered.first?.unwrappingVariants == .bool(true), "speakerd powered the adapter")
        await daemon.shutdown()
    }

    @Test("an adapter that cannot be powered (a BlueZ before 5.64, no PowerState): the status says why, and the speaker connects once it is powered")
    func unpowerableAdapterThenPowered() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        fake.remember([Self.flip])
        try await fake.addAdapter()
        try await fake.mock("UpgradeAdapter", .string("hci0"))
        try await setPowered(false, fake)
        try await fake.mock("SetPowerFailure", .string("hci0"), .string("Blocked through rfkill"))
        try await fake.addSpeaker()
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()
        try await fake.expectBlocked(daemon, saying: "Bluetooth adapter hci0 is blocked by rfkill; run 'rfkill unblock bluetooth'")
        #expect(try await fake.calls("Connect") == 0)

        // Unblocked: with no PowerState to watch, the adapter being powered again is the sign.
        try await fake.mock("SetPowerFailure", .string("hci0"), .string(""))
        try await setPowered(true, fake)
        try await fake.expectResumesAndConnects(daemon, clock)
        await daemon.shutdown()
    }

    func setPowered(_ on: Bool, _ fake: DaemonWorld) async throws {
        _ = try await fake.control.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
                                        method: "Set", arguments: [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.bool(on))])
    }
}
