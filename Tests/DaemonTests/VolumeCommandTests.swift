import AudioPath
@testable import DBus
@testable import Daemon
import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// A stand-in daemon with a speaker whose volume starts at 40 %; with `deviceMissing` it answers
/// as speakerd does while the speaker has no audio device yet.
actor VolumeControl: StandInControl {
    var level = 40
    let deviceMissing: Bool
    let standingReport = StatusReport(
        readiness: "playbackReady", message: "Ready: JBL Flip 5",
        speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true), playback: .idle,
        audioPath: "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink", volume: 40)

    init(deviceMissing: Bool = false) { self.deviceMissing = deviceMissing }

    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport { standingReport }

    func volume() async throws(SpeakerdError) -> VolumeReport {
        guard !deviceMissing else {
            throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: SpeakerVolumeError.noAudioDevice(speaker: "JBL Flip 5").description)
        }
        return VolumeReport(percent: level, address: "11:22:33:AA:BB:CC", name: "JBL Flip 5",
                            device: "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
    }

    func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport {
        _ = try await volume()
        level = change.applied(to: level)
        return try await volume()
    }
}

@Suite("composer-cli volume and the Volume/SetVolume methods", .serialized)
struct VolumeCommandTests {
    /// A bus with the stand-in exported under speakerd's name.
    func serve(_ control: VolumeControl) async throws -> (FakeBusWorld, DBusConnection) {
        let world = try await FakeBusWorld.start(bluez: false)
        let server = try await world.connect()
        try server.export(try SpeakerdDBusObject.make(serving: control, initial: control.standingReport), at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)
        return (world, server)
    }

    @Test("'volume' prints the level, 'volume -5' and 'volume +80' change it (stopping at 100), --json has stable keys")
    func commandLine() async throws {
        let control = VolumeControl()
        let (world, server) = try await serve(control)
        defer { server.close() }
        let shown = try await ExecutableRun.run("composer-cli", ["volume", "--bus", world.address])
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardOutput
                == "Volume: 40 % on JBL Flip 5 (11:22:33:AA:BB:CC), PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink\n")

        let lowered = try await ExecutableRun.run("composer-cli", ["volume", "-5", "--bus", world.address])
        #expect(lowered.status == 0, "\(lowered.standardError)")
        #expect(lowered.standardOutput.hasPrefix("Volume: 35 % on JBL Flip 5"))
        #expect(await control.level == 35)
        // `--` ends the options, as in any command: what follows is the value.
        let dashed = try await ExecutableRun.run("composer-cli", ["volume", "--bus", world.address, "--", "-10"])
        #expect(dashed.status == 0, "\(dashed.standardError)")
        #expect(dashed.standardOutput.hasPrefix("Volume: 25 % on JBL Flip 5"), "\(dashed.standardOutput)")
        #expect(await control.level == 25)

        let raised = try await ExecutableRun.run("composer-cli", ["volume", "--json", "+80", "--bus", world.address])
        #expect(raised.status == 0, "\(raised.standardError)")
        #expect(raised.standardOutput == """
            {
              "address" : "11:22:33:AA:BB:CC",
              "device" : "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink",
              "name" : "JBL Flip 5",
              "percent" : 100
            }

            """)
        let status = try await ExecutableRun.run("composer-cli", ["status", "--json", "--bus", world.address])
        #expect(status.standardOutput.contains("\"volume\" : 40"), "\(status.standardOutput)")
        _ = world
    }

    @Test("a bad value is a usage error (exit 64) in one line, before speakerd is asked", arguments: [
        (["volume", "150"], "composer-cli: volume 150 is out of range: give a percent from 0 to 100"),
        (["volume", "loud"], "composer-cli: 'loud' is not a volume: give a percent from 0 to 100, or +N / -N to change it"),
        (["volume", "10", "20"], "composer-cli: give one volume value, not 2: 10 20"),
    ])
    func usageErrors(arguments: [String], line: String) async throws {
        // No bus at all: the value is refused before any connection is tried.
        let run = try await ExecutableRun.run("composer-cli", arguments + ["--bus", "unix:path=/nonexistent/bus"])
        #expect(run.status == 64)
        #expect(run.standardError == line + "\n")
        #expect(run.standardOutput.isEmpty)
    }

    @Test("Volume and SetVolume are introspectable, and the Volume property carries the status's level")
    func introspection() async throws {
        let control = VolumeControl()
        let (world, server) = try await serve(control)
        defer { server.close() }
        let bus = try await world.connect()
        defer { bus.close() }
        let xml = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path,
                                     interface: "org.freedesktop.DBus.Introspectable", method: "Introspect")
        let text = try xml.decode(String.self, at: 0)
        for member in ["<method name=\"Volume\">", "<method name=\"SetVolume\">", "<property name=\"Volume\" type=\"a{sv}\""] {
            #expect(text.contains(member), "introspection lacks \(member)")
        }
        let property = try await bus.call(destination: SpeakerdBus.name, path: SpeakerdBus.path,
                                          interface: "org.freedesktop.DBus.Properties", method: "Get",
                                          arguments: [.string(SpeakerdBus.interface), .string("Volume")])
        #expect(try property.first?.unwrappingVariants.as([String: DBusValue].self, at: "Volume") == ["Percent": .uint32(40)])
        _ = (world, control)
    }

    @Test("no audio device yet: one stderr line saying so and exit 1; over D-Bus, SetVolume with a bad value is InvalidArgs")
    func daemonRefusals() async throws {
        let control = VolumeControl(deviceMissing: true)  // the exported object holds it only weakly
        let (world, server) = try await serve(control)
        defer { server.close() }
        let run = try await ExecutableRun.run("composer-cli", ["volume", "50", "--bus", world.address])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: " + SpeakerVolumeError.noAudioDevice(speaker: "JBL Flip 5").description + "\n")

        let caller = try await world.connect()
        defer { caller.close() }
        let error = await #expect(throws: DBusError.self) {
            try await caller.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                  method: "SetVolume", arguments: [.string("eleven")])
        }
        #expect(error == .remote(name: DBusError.Name.invalidArgs, message: VolumeChangeError.malformed("eleven").description))
        _ = (world, control)
    }
}
