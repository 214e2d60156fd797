import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import Daemon
import TestSupport
import Testing

/// BlueZ signals a link change before it answers the call that made it, but a client reads the
/// two by different paths: an answer can arrive while signals BlueZ sent before it are still on
/// their way. A user who disconnects and at once connects again must not have the first
/// link's late "disconnected" taken as a drop of the second.
@Suite("The link follows BlueZ's order of signals, not the order answers happen to arrive in")
struct LinkSignalOrderTests {
    @Test("disconnect returns once BlueZ's own report of it is handled, so a connect right after cannot be overtaken by it")
    func disconnectWaitsForItsSignal() async throws {
        let speaker = try BluetoothAddress(DaemonWorld.flip.address)
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: speaker, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, trusted: true)])
        let world = try await InProcessDaemon.start(on: bluez)
        let (daemon, startup) = (world.daemon, world.startup)

        // BlueZ's signals lag behind its answers.
        await bluez.holdEvents()
        let returned = DoneFlag()
        let disconnect = Task {
            let report = try await daemon.disconnect()
            returned.set()
            return report
        }
        try await eventually("BlueZ has answered the Disconnect") { await bluez.calls.contains(.disconnect(speaker)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!returned.isSet, "disconnect returned before BlueZ's own report of it was handled")

        await bluez.releaseEvents()
        let disconnected = try await disconnect.value
        #expect(disconnected.speaker?.connected == false)

        // Connect at once: the link comes up and stays up; nothing late takes it down.
        let connected = try await daemon.connect(speaker)
        #expect(connected.speaker?.connected == true)
        for _ in 0..<20 { await Task.yield() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(await daemon.link.snapshot.connected, "a late 'disconnected' took the new link down")
        #expect(daemon.gate.isReached(.playbackReady), "the user's outcome: ready to play on the speaker")
        let again = try await daemon.disconnect()
        #expect(again.speaker?.connected == false, "a disconnect right after finds the link up, as BlueZ has it")
        await daemon.shutdown()
        startup.cancel()
    }
}
