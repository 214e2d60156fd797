@testable import BlueZ
import Clocks
@testable import Daemon
import Foundation
import Logging
import TestSupport
import Testing

/// The user forgets a speaker just as it connects by itself (switched on, it connects to the
/// box). BlueZ reports that in two signals (the device changed, then "connected"), and the
/// daemon judges such a report against the speakers it knew when it read the report; the
/// user's forget can land in between. The forget must stand: found by the readiness model
/// (seed 2819181), where a forgotten speaker became the target again and was connected "as the
/// last known speaker" once the adapter came back under another index.
@Suite("A forgotten speaker stays forgotten")
struct ForgottenSpeakerTests {

    static let adapterAddress = try! BluetoothAddress("00:01:02:03:04:05")

    @Test("a speaker forgotten while BlueZ's report of it connecting was on its way is not taken back, and is not connected when the adapter returns")
    func forgetOvertakingTheSpeakersOwnConnect() async throws {
        let speaker = try BluetoothAddress(DaemonWorld.flip.address)
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: Self.adapterAddress, powered: true, powerState: .on)],
            devices: [Self.flip(on: "hci0")])
        let world = try await InProcessDaemon.start(on: bluez)
        let (daemon, clock, startup) = (world.daemon, world.clock, world.startup)
        #expect(await bluez.calls.filter { $0 == .connect(speaker) }.count == 1)

        // The speaker's own "connected" was read (with the speakers known then) just before
        // the user's forget, and is handled just after it.
        let knownWhenRead = await daemon.stateStore.knownSpeakers
        let report = try await daemon.forget(speaker)
        #expect(report.speakers.isEmpty)
        await daemon.link.observe(.connected(speaker), known: knownWhenRead)

        // What the user sees: no speaker, none remembered.
        #expect(await daemon.link.snapshot.target == nil, "the forgotten speaker is the target again")
        #expect(try await daemon.speakers().speakers.isEmpty, "the forgotten speaker is remembered again")
        #expect(try await daemon.status().speaker == nil)

        // The adapter comes back under another index (bluetoothd knows the speaker again):
        // start-up runs again, and sends no Connect to the speaker the user forgot.
        await bluez.removeAdapter(named: "hci0")
        try await eventually("the daemon sees the adapter gone") { !daemon.gate.isReached(.adapter) }
        await bluez.addAdapter(Adapter(name: "hci1", address: Self.adapterAddress, powered: true, powerState: .on))
        await bluez.addDevice(Self.flip(on: "hci1"))
        try await eventually("start-up runs again") { await daemon.rerun != nil }
        let rerun = try #require(await daemon.rerun)
        let ranAgain = DoneFlag()
        Task { await rerun.value; ranAgain.set() }
        _ = try await clock.advance(atMost: .seconds(30), until: "start-up has run again") { ranAgain.isSet }
        #expect(await bluez.calls.filter { $0 == .connect(speaker) }.count == 1, "a Connect went to the speaker the user forgot")
        #expect(await daemon.link.snapshot.target == nil)

        await daemon.shutdown()
        startup.cancel()
    }

    /// The user disconnected the Flip (hold on), then forgot it. The hold was on that speaker:
    /// when start-up runs again, it connects the other speaker the box knows, as a speakerd
    /// started afresh would, rather than staying silent with nothing held.
    @Test("forgetting the speaker you disconnected lifts the hold: start-up running again connects the other known speaker, ready to play")
    func forgettingTheHeldSpeakerLiftsTheHold() async throws {
        let (flip, charge) = (try BluetoothAddress(DaemonWorld.flip.address), try BluetoothAddress(DaemonWorld.charge.address))
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: Self.adapterAddress, powered: true, powerState: .on)],
            devices: [Self.flip(on: "hci0"), Self.charge(on: "hci0")])
        let world = try await InProcessDaemon.start(on: bluez, remembering: [DaemonWorld.flip, DaemonWorld.charge])
        let (daemon, clock, startup) = (world.daemon, world.clock, world.startup)
        #expect(try await daemon.status().speaker?.address == DaemonWorld.flip.address)

        let held = try await daemon.disconnect()
        #expect(held.message == "Disconnected from JBL Flip 5 as asked; 'composer-cli connect' reconnects")
        let known = try await daemon.forget(flip)
        #expect(known.speakers.map(\.address) == [DaemonWorld.charge.address])

        // The adapter comes back under another index: start-up runs again.
        await bluez.removeAdapter(named: "hci0")
        try await eventually("the daemon sees the adapter gone") { !daemon.gate.isReached(.adapter) }
        await bluez.addAdapter(Adapter(name: "hci1", address: Self.adapterAddress, powered: true, powerState: .on))
        await bluez.addDevice(Self.flip(on: "hci1"))
        await bluez.addDevice(Self.charge(on: "hci1"))
        _ = try await clock.advance(atMost: .seconds(30), until: "ready to play on the Charge") { daemon.gate.isReached(.playbackReady) }

        // The user's outcome: ready to play on the speaker the box still knows; none to the forgotten one.
        let status = try await daemon.status()
        #expect(status.speaker == .init(address: DaemonWorld.charge.address, name: "JBL Charge 4", connected: true))
        #expect(status.readiness == "playbackReady")
        #expect(await bluez.calls.filter { $0 == .connect(charge) }.count == 1)
        #expect(await bluez.calls.filter { $0 == .connect(flip) }.count == 1, "only start-up's first Connect went to the forgotten speaker")

        await daemon.shutdown()
        startup.cancel()
    }

    static func flip(on adapter: String) -> Device {
        Device(address: try! BluetoothAddress(DaemonWorld.flip.address), adapterName: adapter, name: "JBL Flip 5",
               deviceClass: 0x240414, paired: true, trusted: true, uuids: [BlueZUUID.a2dpSink])
    }

    static func charge(on adapter: String) -> Device {
        Device(address: try! BluetoothAddress(DaemonWorld.charge.address), adapterName: adapter, name: "JBL Charge 4",
               deviceClass: 0x240414, paired: true, trusted: true, uuids: [BlueZUUID.a2dpSink])
    }
}
