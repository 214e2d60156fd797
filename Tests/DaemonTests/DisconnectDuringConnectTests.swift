@testable import BlueZ
@testable import Daemon
import Foundation
import TestSupport
import Testing

/// The user disconnects while our Connect is already with BlueZ (the speaker is being paged,
/// or the link is up and the answer is on its way). Stopping our attempt does not stop BlueZ:
/// cancelling a D-Bus call only stops waiting for its answer. Found by the readiness model
/// (seed 166316, invariant (d)): the speaker came up after the user's disconnect had returned.
@Suite("A user's disconnect during a connect in flight")
struct DisconnectDuringConnectTests {
    @Test("disconnect while BlueZ is still answering our Connect ends that link too: the speaker stays off, and a play is refused with the user's disconnect as the reason")
    func disconnectOvertakingAConnectInFlight() async throws {
        let (speaker, bluez) = try LinkSignalOrderTests.flipPairedOnFakeBlueZ()
        let world = try await InProcessDaemon.start(on: bluez)
        let (daemon, startup) = (world.daemon, world.startup)
        _ = try await daemon.disconnect()

        // The user connects again; BlueZ brings the link up, but its signals and its answer lag.
        await bluez.holdEvents()
        await bluez.holdAnswers()
        let connect = Task { try? await daemon.connect(speaker) }
        try await eventually("our Connect reached BlueZ") { await bluez.calls.filter { $0 == .connect(speaker) }.count == 2 }

        // They change their mind before any answer arrives.
        let disconnect = Task { try await daemon.disconnect() }
        try await eventually("a Disconnect follows our Connect to BlueZ") {
            await bluez.calls.filter { $0 == .disconnect(speaker) }.count == 2
        }
        await bluez.releaseAnswers()
        await bluez.releaseEvents()
        let report = try await disconnect.value
        _ = await connect.value

        // The user's outcome: the speaker is off the link, as they asked last, and stays off.
        #expect(report.speaker?.connected == false)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await bluez.device(speaker)?.connected == false, "BlueZ kept the link the user disconnected")
        #expect(await !daemon.link.snapshot.connected)
        #expect(await bluez.calls.filter { $0 == .connect(speaker) }.count == 2, "a Connect went out after the user's disconnect")
        // A play now is refused at once with the reason, rather than waiting for a link.
        #expect(await daemon.readiness.waitingFor == .userDisconnected("JBL Flip 5"))
        #expect(!daemon.gate.isReached(.speakerConnected))
        await daemon.shutdown()
        startup.cancel()
    }
}
