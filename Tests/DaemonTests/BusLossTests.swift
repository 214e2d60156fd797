import AsyncSignals
@testable import BlueZ
@testable import DBus
import Foundation
import Logging
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
@testable import Systemd
import TestSupport
import Testing
@testable import Configuration

/// speakerd's own bus dying is the one fault it does not ride out: with the connection gone it
/// has no API left, so it winds down and exits non-zero for systemd's `Restart=on-failure` to
/// bring it back. bluetoothd leaving is different (the daemon waits for it), and both are here.

/// Kills `world`'s dbus-daemon outright (a crash: its socket just hangs up), as `kill -9` would.
func killBusDaemon(of world: FakeBusWorld) async throws {
    let bus = try await world.connect()
    defer { bus.close() }
    let pid = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                 interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
                                 arguments: [.string("org.freedesktop.DBus")]).decode(UInt32.self, at: 0)
    try #require(kill(pid_t(pid), SIGKILL) == 0, "cannot kill the bus daemon (pid \(pid))")
}

/// Whether `pid` (our unreaped child) has exited: it is a zombie until `ExecutableRun` reaps it.
func hasExited(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let afterName = stat.range(of: ") ") else { return true }
    return stat[afterName.upperBound...].hasPrefix("Z")
}

extension DaemonIntegrationTests {
    /// A daemon whose log lines (with their journald priorities) and sd_notify datagrams the test reads.
    func observedDaemon(_ world: FakeBusWorld, state: TemporaryDirectory, listener: NotifySocketListener,
                        lines: Journal, makeBlueZ: (@Sendable (DBusConnection?) async throws -> any BlueZClient)? = nil)
        throws -> SpeakerdDaemon {
        let configuration = DaemonConfiguration(scanDuration: .seconds(1), stateDirectory: state.path,
                                                bus: .address(world.address))
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { lines.record($0) } }
        let dependencies = DaemonDependencies(
            connectBus: { _ in try await DBusConnection.connect(world.bus) },
            makeBlueZ: makeBlueZ ?? { connection in try await DBusBlueZClient.start(connection: connection!, logger: logger) })
        return SpeakerdDaemon(configuration: configuration, dependencies: dependencies,
                              notifier: try SystemdNotifier(destination: .path(listener.notifySocket)), logger: logger)
    }

    @Test("losing the bus while running ends the service with busLost after STOPPING=1, logged once as critical")
    func busLostWhileRunning() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        let world = fake.world, state = fake.state
        let listener = NotifySocketListener(path: state.path + "/notify")
        let lines = Journal()
        let daemon = try observedDaemon(world, state: state, listener: listener, lines: lines)
        let service = SpeakerdService(daemon: daemon)
        let running = Task { try await service.run() }
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))

        try await killBusDaemon(of: world)
        await #expect(throws: SpeakerdServiceError.busLost(.address(world.address))) { try await running.value }
        let expected = "<2>speakerd: lost the D-Bus connection to \(world.address); exiting so systemd can restart speakerd\n"
        #expect(lines.containing("lost the D-Bus connection") == [expected])
        #expect(listener.receiveAll().contains { $0.hasPrefix("STOPPING=1") })
        #expect(await daemon.lifecycle == .stopped)
        _ = world
    }

    @Test("losing the bus in the middle of start-up ends the service with busLost even while a step is stuck")
    func busLostDuringStartup() async throws {
        let fake = try await DaemonWorld.start()
        fake.remember([DaemonWorld.flip])
        let world = fake.world, state = fake.state
        let listener = NotifySocketListener(path: state.path + "/notify")
        let lines = Journal()
        // Reaching BlueZ never finishes (and ignores cancellation): only the bus loss can end start-up.
        let stuck = HeldGate()
        let daemon = try observedDaemon(world, state: state, listener: listener, lines: lines) { _ in
            await stuck.wait()
            throw CancellationError()
        }
        let running = Task { try await SpeakerdService(daemon: daemon).run() }
        defer { stuck.open() }
        try await daemon.gate.wait(for: .bus, timeout: .seconds(10))
        for _ in 0..<500 where stuck.waiting == 0 { try await Task.sleep(for: .milliseconds(10)) }  // bounded
        #expect(stuck.waiting == 1, "start-up never reached the stuck BlueZ step")

        try await killBusDaemon(of: world)
        await #expect(throws: SpeakerdServiceError.busLost(.address(world.address))) { try await running.value }
        #expect(lines.containing("lost the D-Bus connection").count == 1)
        #expect(listener.receiveAll().contains { $0.hasPrefix("STOPPING=1") })
        _ = world
    }

    @Test("bluetoothd leaving is not a lost bus: the daemon keeps serving and waits for it")
    func bluetoothdLeavingIsNotBusLoss() async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        let world = fake.world
        let daemon = fake.makeDaemon()
        await daemon.start()
        try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
        try await world.stopBlueZ()
        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "test")
        var status = try await client.status()
        for _ in 0..<200 where status.speaker?.connected != false {  // bounded: crosses a real bus
            try await Task.sleep(for: .milliseconds(10))
            status = try await client.status()
        }
        // It noticed (the speaker is no longer connected) and still answers on its bus.
        #expect(status.speaker?.connected == false)
        #expect(status.readiness == "bus")
        #expect(daemon.lostBus.result == nil)
        await daemon.shutdown()
        #expect(daemon.lostBus.result == nil, "closing our own connection at shutdown is not a loss")
        _ = world
    }
}

extension DaemonProcessTests {
    @Test("the real speakerd: bluetoothd leaving keeps it waiting; its bus dying makes it exit 75 at once with STOPPING=1 and one clear line")
    func busDeathEndsSpeakerd() async throws {
        let world = try await FakeBusWorld.start()
        let speaker = DaemonWorld.flip.address
        let setup = try await world.connect()
        _ = try await world.mock("AddAdapter", path: "/org/bluez", arguments: [.string("hci0"), .string("box")], using: setup)
        _ = try await world.mock("AddDevice", path: "/org/bluez",
                                 arguments: [.string("hci0"), .string(speaker), .string("JBL Flip 5")], using: setup)
        setup.close()
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip], in: state)
        state.write("", to: "speakerd.conf")
        let listener = NotifySocketListener(path: state.path + "/notify")

        let run = try await ExecutableRun.run(
            "speakerd", ["--config", state.path + "/speakerd.conf", "--state-dir", state.path,
                         "--bus", world.address, "--audio-output", "null"],
            // Under systemd, stderr is the journal: its lines carry their priority.
            environment: ["NOTIFY_SOCKET": listener.notifySocket], journal: true
        ) { pid in
            let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
            // Start-up over (playback-ready comes last): bluetoothd leaving mid start-up is another story.
            try await eventually("speakerd has connected the speaker and finished start-up") {
                guard let status = try? await client.status() else { return false }
                return status.speaker?.connected == true && status.readiness == "playbackReady"
            }
            // bluetoothd goes away: speakerd notices, stays, and still answers.
            try await world.stopBlueZ()
            try await eventually("speakerd has seen the speaker go with bluetoothd") {
                (try? await client.status().speaker?.connected) == false
            }
            #expect(!hasExited(pid), "speakerd exited when only bluetoothd left")

            // Its own bus dies: nothing is left to serve, so it must exit (a timeout here kills it).
            try await killBusDaemon(of: world)
            try await eventually("speakerd has exited after its bus died", within: .seconds(20)) { hasExited(pid) }
        }
        #expect(run.status == 75, "speakerd ended with \(run.status); stderr:\n\(run.standardError)")
        let line = "<2>speakerd: lost the D-Bus connection to \(world.address); exiting so systemd can restart speakerd"
        let lines = run.standardError.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.contains("lost the D-Bus connection") } == [line], "stderr:\n\(run.standardError)")
        #expect(lines.last == line, "nothing should follow the reason speakerd exits; stderr:\n\(run.standardError)")
        let notifications = listener.receiveAll()
        #expect(notifications.contains { $0.hasPrefix("STOPPING=1") })
        #expect(notifications.last?.hasPrefix("STOPPING=1") == true, "STOPPING=1 is the last word to systemd")
        _ = world
    }

    @Test("composer-cli play --wait whose bus dies mid-song ends with one clear line and a non-zero status")
    func busDeathEndsPlayWait() async throws {
        let song = try GatedPlayEndToEndTests.song().replacingOccurrences(of: "test-c-major-scale", with: "test-all-gm-sounds")
        let world = try await FakeBusWorld.start()
        let setup = try await world.connect()
        _ = try await world.mock("AddAdapter", path: "/org/bluez", arguments: [.string("hci0"), .string("box")], using: setup)
        _ = try await world.mock("AddDevice", path: "/org/bluez",
                                 arguments: [.string("hci0"), .string(DaemonWorld.flip.address), .string("JBL Flip 5")], using: setup)
        setup.close()
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip], in: state)
        state.write("", to: "speakerd.conf")
        let played = Mutex<ExecutableRun?>(nil)

        let daemon = try await ExecutableRun.run(
            "speakerd", ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", world.address,
                         "--audio-output", "null", "--soundfont", GatedPlayEndToEndTests.soundFont]
        ) { pid in
            let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
            try await eventually("speakerd answers") { (try? await client.status()) != nil }
            // A song of almost six minutes: it is still playing when the bus dies.
            async let play = ExecutableRun.run("composer-cli", ["play", "--wait", song, "--bus", world.address])
            try await eventually("the song is playing") {
                (try? await client.status().playback.state) == "playing"
            }
            try await killBusDaemon(of: world)
            let run = try await play
            played.withLock { $0 = run }
            try await eventually("speakerd has exited after its bus died", within: .seconds(20)) { hasExited(pid) }
        }
        #expect(daemon.status == 75, "speakerd ended with \(daemon.status); stderr:\n\(daemon.standardError)")
        let run = try #require(played.withLock { $0 })
        #expect(run.status != 0)
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("composer-cli: ") && lines[0].contains("D-Bus"),
                "composer-cli's stderr:\n\(run.standardError)")
        _ = world
    }
}
