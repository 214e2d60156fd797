import AsyncSignals
@testable import BlueZ
import Foundation
import Logging
@testable import Daemon
@testable import SpeakerdAPI
@testable import Systemd
import TestSupport
import Testing

/// The coordinator in-process against python-dbusmock's stock bluez5 template on a private bus.
///
/// Serialized, and worlds are left to their deinit: concurrent harness teardown has crashed the
/// runner (see SpeakerdAPITests). Waits are bounded by the readiness gate's timeout: they end as
/// soon as the daemon gets there, and the bound only turns a hang into a failure.
@Suite("speakerd against the fake BlueZ", .serialized)
struct DaemonIntegrationTests {
    static let flip = DaemonWorld.flip.address

    /// The stock template with adapter hci0 and the JBL Flip 5 on it, remembered as last used.
    func knownSpeakerWorld() async throws -> DaemonWorld {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        return fake
    }

    /// Started by systemd (as at boot), speakerd also checks whether a request was waiting for
    /// its name; with nobody calling, start-up stays regular.
    @Test("regular start connects the last speaker, says READY=1 once the API is up, and answers status",
          arguments: [false, true])
    func regularStart(startedBySystemd: Bool) async throws {
        let fake = try await knownSpeakerWorld()
        let listener = NotifySocketListener(path: fake.state.path + "/notify")
        let daemon = fake.makeDaemon(notifier: try SystemdNotifier(destination: .path(listener.notifySocket))) {
            $0.startedBySystemd = startedBySystemd
        }
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))

        let client = try await fake.client()
        let status = try await client.status()
        #expect(status.speaker == .init(address: Self.flip, name: "JBL Flip 5", connected: true))
        #expect(status.readiness == "speakerConnected")
        let timeline = try await client.startup()
        #expect(timeline.scenario == "regular")
        #expect(timeline.operations.first { $0.name == "connectKnownSpeaker" }?.outcome == "ok")
        #expect(timeline.criticalPath.last == "connectKnownSpeaker")
        let messages = listener.receiveAll()
        #expect(messages.filter { $0.contains("READY=1") }.count == 1)
        #expect(messages.contains { $0.contains("STATUS=Connecting to JBL Flip 5…") })
        await daemon.shutdown()
        #expect(listener.receiveAll().contains { $0.hasPrefix("STOPPING=1") })
        _ = fake
    }

    @Test("no BlueZ closes the compatibility gate; the daemon resumes by itself when bluetoothd and an adapter appear")
    func compatibilityGate() async throws {
        let fake = try await DaemonWorld.start(bluez: false)
        fake.remember([DaemonWorld.flip])
        let daemon = fake.makeDaemon()
        await daemon.start()
        var status = try await daemon.status()
        #expect(status.message == "Waiting for bluetoothd (org.bluez is not on the bus; is bluetooth.service running?)")
        #expect(await daemon.startupTimeline?.abortReason != nil)
        #expect(status.readiness == "bus")  // the API answers while blocked

        try await fake.world.startBlueZ()
        try await daemon.gate.wait(for: .bus, timeout: .seconds(10))
        try await fake.addAdapter()
        try await fake.addSpeaker()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        status = try await daemon.status()
        #expect(status.speaker?.connected == true)
        await daemon.shutdown()
        _ = fake
    }

    @Test("a user's disconnect is respected: the speaker stays disconnected until asked")
    func userDisconnect() async throws {
        let fake = try await knownSpeakerWorld()
        let daemon = fake.makeDaemon()
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        let afterDisconnect = try await daemon.disconnect()
        #expect(afterDisconnect.message == "Disconnected from JBL Flip 5 as asked; 'composer-cli connect' reconnects")
        #expect(afterDisconnect.speaker?.connected == false)
        // The speaker is seen again (advertising): still no reconnect.
        await daemon.handle(.deviceChanged(Device(address: try BluetoothAddress(Self.flip), connected: false, rssi: -40)))
        #expect(daemon.gate.level < .speakerConnected)
        let reconnected = try await daemon.connect(nil)
        #expect(reconnected.speaker?.connected == true)
        await daemon.shutdown()
        _ = fake
    }

    @Test("logind's PrepareForSleep holds reconnects while asleep and schedules one shortly after resume")
    func suspendAndResume() async throws {
        let fake = try await knownSpeakerWorld()
        let daemon = fake.makeDaemon()
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        let logind = try await fake.world.connect()
        defer { logind.close() }
        try await logind.requestName("org.freedesktop.login1")
        func emit(_ starting: Bool) throws {
            try logind.emitSignal(path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                                  member: "PrepareForSleep", arguments: [.bool(starting)])
        }
        func reconnectState(matches predicate: (ReconnectPolicy<ErasedClock>.State?) -> Bool) async throws -> Bool {
            for _ in 0..<200 {  // bounded: the signal crosses a real bus
                if predicate(await daemon.link.reconnectState) { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }
        try emit(true)
        #expect(try await reconnectState { $0 == .asleep(.reconnect) })
        try emit(false)
        #expect(try await reconnectState { if case .waiting(.eager, attempt: 0, _)? = $0 { true } else { false } })
        await daemon.shutdown()
        _ = fake
    }

    @Test("a malformed address or an unknown device gets a clear error from the real API")
    func connectErrors() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        let daemon = fake.makeDaemon()
        await daemon.start()
        let error = await #expect(throws: SpeakerdError.self) {
            _ = try await daemon.connect(try BluetoothAddress("22:33:44:BB:CC:DD"))
        }
        #expect(error?.description.hasPrefix("BlueZ does not know 22:33:44:BB:CC:DD") == true)
        let forgetUnknown = await #expect(throws: SpeakerdError.self) {
            _ = try await daemon.forget(try BluetoothAddress("22:33:44:BB:CC:DD"))
        }
        #expect(forgetUnknown?.description == "22:33:44:BB:CC:DD is not a known speaker")
        await daemon.shutdown()
        _ = fake
    }
}

@Suite("speakerd process lifecycle", .serialized)
struct DaemonProcessTests {
    @Test("SIGTERM in the middle of start-up stops speakerd cleanly with STOPPING=1 and exit status 0")
    func sigtermDuringStartup() async throws {
        // bluetoothd is absent, so start-up is waiting at the compatibility gate when SIGTERM comes.
        let fake = try await DaemonWorld.start(bluez: false)
        let listener = NotifySocketListener(path: fake.state.path + "/notify")
        let run = try await ExecutableRun.run(
            "speakerd", ["--bus", fake.world.address, "--state-dir", fake.state.path, "--audio-output", "null"],
            environment: ["NOTIFY_SOCKET": listener.notifySocket]
        ) { pid in
            // Wait (bounded) for READY=1 and the gate's status: the API is up, start-up is blocked
            // on BlueZ. (READY=1 alone comes before the BlueZ step, so SIGTERM could beat it.)
            try await eventually("speakerd says READY=1 and that it waits for bluetoothd") {
                _ = listener.receivedCount(adding: 0)
                return listener.pending.contains { $0.contains("READY=1") }
                    && listener.pending.contains { $0.contains("STATUS=Waiting for bluetoothd") }
            }
            kill(pid, SIGTERM)
        }
        #expect(run.status == 0, "stderr: \(run.standardError)")
        _ = listener.receivedCount(adding: 0)
        #expect(listener.pending.contains { $0.hasPrefix("STOPPING=1") })
        #expect(listener.pending.contains { $0.contains("STATUS=Waiting for bluetoothd") })
        _ = fake
    }
}
