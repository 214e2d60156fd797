@testable import BlueZ
@testable import DBus
import Foundation
@testable import SpeakerdAPI
import Synchronization
import SystemPackage
import TestSupport
import Testing

/// A stand-in daemon: answers from fixed reports and records what it was asked.
actor RecordingControl: SpeakerdControl {
    var calls: [String] = []
    var playedBytes: [UInt8] = []
    let statusReport = StatusReport(
        readiness: "playbackReady", message: "Ready: JBL Flip 5",
        speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
        playback: .init(state: "playing", file: "song.mid", positionSeconds: 1.5, durationSeconds: 90))

    func status() async throws(SpeakerdError) -> StatusReport { calls.append("status"); return statusReport }
    func startup() async throws(SpeakerdError) -> StartupReport {
        StartupReport(scenario: "regular", operations: [
            .init(name: "config", startMs: 0, endMs: 0.3, outcome: "ok"),
            .init(name: "bus", startMs: 0.3, endMs: nil, outcome: "running"),
        ], criticalPath: ["config", "bus"])
    }
    func scan() async throws(SpeakerdError) -> ScanReport {
        ScanReport(candidates: [.init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", rssi: -50, known: true, audioSink: true),
                                .init(address: "22:33:44:BB:CC:DD", name: "Phone", rssi: nil, known: false, audioSink: false)])
    }
    func speakers() async throws(SpeakerdError) -> SpeakersReport {
        SpeakersReport(speakers: [.init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true,
                                        lastConnected: "2027-01-15T08:00:00Z")])
    }
    func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport {
        calls.append("connect \(address.map { "\($0)" } ?? "last")")
        guard address?.description != "22:33:44:BB:CC:DD" else {
            throw .rejected(name: SpeakerdBus.ErrorName.unknownDevice, message: "BlueZ does not know 22:33:44:BB:CC:DD")
        }
        return statusReport
    }
    func disconnect() async throws(SpeakerdError) -> StatusReport { calls.append("disconnect"); return statusReport }
    func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport {
        calls.append("forget \(address)")
        return SpeakersReport(speakers: [])
    }
    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        calls.append("play \(request.displayName) queue=\(request.queue)")
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = (try? buffer.withUnsafeMutableBytes { try request.file.read(into: $0) }) ?? 0
        playedBytes = Array(buffer[0..<count])
        try? request.file.close()
        return statusReport
    }
    func stop() async throws(SpeakerdError) -> StatusReport { calls.append("stop"); return statusReport }
    func pause() async throws(SpeakerdError) -> StatusReport { calls.append("pause"); return statusReport }
    func resume() async throws(SpeakerdError) -> StatusReport { calls.append("resume"); return statusReport }
}

/// Serialized, and worlds are not stopped with `stop()`: concurrent `FakeBusHarness.stop()` calls
/// (Foundation `Process.waitUntilExit` on several threads) have crashed the runner in libdispatch.
@Suite("speakerd's D-Bus API, served and called over a private bus", .serialized)
struct SpeakerdAPITests {
    /// A bus with the stand-in daemon exported under speakerd's name, and a client connection.
    func serve() async throws -> (FakeBusWorld, RecordingControl, DBusConnection, SpeakerdDBusClient) {
        let world = try await FakeBusWorld.start(bluez: false)
        let control = RecordingControl()
        let server = try await world.connect()
        let object = try SpeakerdDBusObject.make(serving: control, initial: control.statusReport)
        try server.export(object, at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)
        let clientConnection = try await world.connect()
        return (world, control, server, SpeakerdDBusClient(connection: clientConnection))
    }

    @Test("every report survives the trip over the bus unchanged")
    func reportsRoundTrip() async throws {
        let (world, control, server, client) = try await serve()
        defer { server.close() }
        #expect(try await client.status() == control.statusReport)
        #expect(try await client.startup() == control.startup())
        #expect(try await client.scan() == control.scan())
        #expect(try await client.speakers() == control.speakers())
        _ = try await client.pause()
        _ = try await client.resume()
        _ = try await client.stop()
        _ = try await client.disconnect()
        _ = try await client.connect(nil)
        _ = try await client.forget(try BluetoothAddress("11:22:33:AA:BB:CC"))
        #expect(await control.calls == ["status", "pause", "resume", "stop", "disconnect", "connect last",
                                        "forget 11:22:33:AA:BB:CC"])
        _ = world  // torn down by its deinit (closing the harness's stdin) without waiting
    }

    @Test("play hands the daemon an open file descriptor, never a path")
    func playPassesDescriptor() async throws {
        let (world, control, server, client) = try await serve()
        defer { server.close() }
        let directory = TemporaryDirectory()
        directory.write("MThd-not-really", to: "song.mid")
        let file = try FileDescriptor.open(directory.path + "/song.mid", .readOnly)
        defer { try? file.close() }
        _ = try await client.play(PlayRequest(file: file, displayName: "song.mid", queue: true))
        #expect(await control.calls == ["play song.mid queue=true"])
        #expect(await control.playedBytes == Array("MThd-not-really".utf8))
        _ = world  // torn down by its deinit (closing the harness's stdin) without waiting
    }

    @Test("a malformed address, an unknown device and a wrong type get D-Bus errors with clear messages")
    func inputValidation() async throws {
        let (world, control, server, client) = try await serve()
        defer { server.close() }
        let bus = try await world.connect()
        let malformed = await #expect(throws: DBusError.self) {
            _ = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                   method: "Connect", arguments: [.string("11:22:33")])
        }
        guard case .remote(let name, let message) = malformed else { Issue.record("expected a remote error"); return }
        #expect(name == SpeakerdBus.ErrorName.invalidAddress)
        #expect(message.contains("'11:22:33' is not a Bluetooth address"))

        let unknown = await #expect(throws: SpeakerdError.self) {
            _ = try await client.connect(try BluetoothAddress("22:33:44:BB:CC:DD"))
        }
        #expect(unknown == .rejected(name: SpeakerdBus.ErrorName.unknownDevice, message: "BlueZ does not know 22:33:44:BB:CC:DD"))

        let wrongType = await #expect(throws: DBusError.self) {
            _ = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                   method: "Forget", arguments: [.int32(7)])
        }
        guard case .remote(let typeName, _) = wrongType else { Issue.record("expected a remote error"); return }
        #expect(typeName == DBusError.Name.invalidArgs)
        #expect(await control.calls == ["connect 22:33:44:BB:CC:DD"])
        _ = world  // torn down by its deinit (closing the harness's stdin) without waiting
    }

    @Test("the API is introspectable and its properties readable")
    func introspectionAndProperties() async throws {
        let (world, _, server, _) = try await serve()
        defer { server.close() }
        let bus = try await world.connect()
        let xml = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path,
                                     interface: "org.freedesktop.DBus.Introspectable", method: "Introspect")
        let text = try xml.decode(String.self, at: 0)
        for member in ["io.speakerd.Daemon1", "\"Play\"", "\"StartupTimeline\"", "\"Readiness\"", "\"PlaybackChanged\""] {
            #expect(text.contains(member), "introspection lacks \(member)")
        }
        let readiness = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path,
                                           interface: "org.freedesktop.DBus.Properties", method: "Get",
                                           arguments: [.string(SpeakerdBus.interface), .string("Readiness")])
        #expect(readiness.first?.unwrappingVariants == .string("playbackReady"))
        _ = world  // torn down by its deinit (closing the harness's stdin) without waiting
    }

    @Test("a client with no daemon on the bus gets one clear sentence")
    func noDaemon() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "session")
        let error = await #expect(throws: SpeakerdError.self) { _ = try await client.status() }
        #expect(error?.description == "cannot reach speakerd on the session bus: speakerd is not running (and could not be started); start it with 'systemctl start speakerd', its log is 'journalctl -u speakerd'")
        _ = world  // torn down by its deinit (closing the harness's stdin) without waiting
    }
}
