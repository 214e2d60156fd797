@testable import DBus
import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

/// speakerd started the way a request starts it on a machine: nobody runs it; `composer-cli play`
/// calls its name on a bus that has an activation file for it, and the bus daemon launches it.
///
/// Two ways the bus starts it, as on real machines:
/// - **by dbus-daemon itself** (`Exec=`): the Exec= gives no `--bus` and points
///   `DBUS_SYSTEM_BUS_ADDRESS` at a socket that does not exist, so the request can only be served
///   if speakerd found the bus that started it (`DBUS_STARTER_ADDRESS`);
/// - **through systemd** (`SystemdService=`, what systemd/ ships): systemd starts the unit with
///   no `DBUS_STARTER_*` and with an `INVOCATION_ID`, on the bus the unit names. The launcher
///   recreates exactly that environment (there is no PID-1 systemd here), so speakerd can only
///   know a request is waiting from the calls it is handed once it owns its name.
/// Serialized and bounded like the other end-to-end suites.
@Suite("Launched by a request: D-Bus activation end to end", .serialized)
struct ActivationEndToEndTests {
    static let speaker = "11:22:33:AA:BB:CC"

    enum Launch: String, CustomTestStringConvertible, CaseIterable {
        case byDBusDaemon, bySystemd
        var testDescription: String { self == .byDBusDaemon ? "started by dbus-daemon" : "started as systemd starts it" }

        /// The launcher's body: the environment speakerd gets, then its command line.
        func script(speakerd: String, state: String, wav: String) -> String {
            let flags = """
                --config '\(state)/speakerd.conf' --state-dir '\(state)' \
                  --audio-output 'file:\(wav)' --soundfont '\(GatedPlayEndToEndTests.soundFont)' 2>>'\(state)/speakerd.log'
                """
            switch self {
            case .byDBusDaemon:
                return """
                    DBUS_SYSTEM_BUS_ADDRESS='unix:path=\(state)/no-system-bus-here' exec '\(speakerd)' \
                      \(flags)
                    """
            case .bySystemd:
                // The unit knows its bus (the system bus; here the test's); systemd passes no starter variables.
                return """
                    bus="$DBUS_STARTER_ADDRESS"
                    unset DBUS_STARTER_ADDRESS DBUS_STARTER_BUS_TYPE
                    INVOCATION_ID=5f0e3c1d2b4a49c8a1e7d6f5c4b3a291 exec '\(speakerd)' --bus "$bus" \
                      \(flags)
                    """
            }
        }
    }

    /// A state dir with one known speaker and an activation file that starts speakerd on it.
    func prepare(_ launch: Launch, knowsTheSpeaker: Bool = true) throws -> (state: TemporaryDirectory, services: String, wav: String) {
        let state = TemporaryDirectory()
        if knowsTheSpeaker {
            state.write("""
                {"version":1,"speakers":[{"address":"\(Self.speaker)","name":"JBL Flip 5",\
                "firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
                """, to: "state.json")
        }
        state.write("", to: "speakerd.conf")
        let services = state.path + "/services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        let wav = state.path + "/song.wav"
        let speakerd = ExecutableRun.productsDirectory.appendingPathComponent("speakerd").path
        state.write("#!/bin/sh\n" + launch.script(speakerd: speakerd, state: state.path, wav: wav) + "\n",
                    to: "launch-speakerd")
        guard chmod(state.path + "/launch-speakerd", 0o755) == 0 else { throw POSIXError(.EPERM) }
        // Run through /bin/sh rather than exec'd itself: a child forked by another test at the
        // moment the script was written may still hold it open for writing, and executing a
        // file open for writing fails with ETXTBSY ("Text file busy"); reading it never does.
        state.write("[D-BUS Service]\nName=\(SpeakerdBus.name)\nExec=/bin/sh \(state.path)/launch-speakerd\n",
                    to: "services/\(SpeakerdBus.name).service")
        return (state, services, wav)
    }

    /// A bus whose activation files are in `services`, with the fake BlueZ's adapter and speaker,
    /// and the test's own connection to it.
    func worldWithSpeaker(activating services: String) async throws -> (FakeBusWorld, DBusConnection) {
        let world = try await FakeBusWorld.start(serviceDirectory: services)
        let bus = try await world.connect()
        _ = try await world.mock("AddAdapter", path: "/org/bluez", arguments: [.string("hci0"), .string("box")], using: bus)
        _ = try await world.mock("AddDevice", path: "/org/bluez",
                                 arguments: [.string("hci0"), .string(Self.speaker), .string("JBL Flip 5")], using: bus)
        return (world, bus)
    }

    /// The process that owns speakerd's name on `bus`, if any.
    func owner(on bus: DBusConnection) async -> pid_t? {
        let reply = try? await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                        interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
                                        arguments: [.string(SpeakerdBus.name)])
        guard case .uint32(let pid)? = reply?.first else { return nil }
        return pid_t(pid)
    }

    @Test("composer-cli play activates speakerd, which serves on the bus that started it, runs the launched-by-request start-up and plays the song",
          arguments: Launch.allCases)
    func playActivatesSpeakerd(_ launch: Launch) async throws {
        let songPath = try GatedPlayEndToEndTests.song()
        let (state, services, wav) = try prepare(launch)
        let (world, bus) = try await worldWithSpeaker(activating: services)
        defer { bus.close() }
        #expect(await owner(on: bus) == nil, "speakerd must not be running before the request")

        let played = try await ExecutableRun.run("composer-cli", ["play", songPath, "--bus", world.address])
        let pid = await owner(on: bus)
        do {
            #expect(played.status == 0, "composer-cli play failed: \(played.standardError) speakerd: \(state.read("speakerd.log") ?? "")")
            #expect(played.standardError.isEmpty)
            try #require(pid != nil, "no speakerd owns \(SpeakerdBus.name) after the request")

            let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
            let timeline = try await client.startup()
            #expect(timeline.scenario == StartupScenarios.Name.launchedByRequest)
            #expect(timeline.operations.first { $0.name == StartupScenarios.Step.connectKnown }?.outcome == "ok")
            try await eventually("the song has played to its end", within: .seconds(30)) {
                let state = try await client.status().playback.state
                return state != "waiting" && state != "playing"
            }
            #expect(try await client.status().readiness == "playbackReady")
            let file = try WAVFile(path: wav)
            #expect(WAVAnalysis.rms(file.monoFloat[...]) > 0.005, "the rendered song is silent")

            // SIGTERM: speakerd leaves the bus (its name is released) as it shuts down.
            kill(pid!, SIGTERM)
            try await eventually("speakerd has left the bus after SIGTERM") { await owner(on: bus) == nil }
        } catch {
            if let pid { kill(pid, SIGKILL) }
            throw error
        }
        _ = world
    }

    @Test("composer-cli connect ADDRESS to a stopped speakerd starts it through D-Bus activation, waits for it, and connects the speaker",
          arguments: Launch.allCases)
    func connectActivatesSpeakerd(_ launch: Launch) async throws {
        let (state, services, _) = try prepare(launch, knowsTheSpeaker: false)
        let (world, bus) = try await worldWithSpeaker(activating: services)
        defer { bus.close() }
        #expect(await owner(on: bus) == nil, "speakerd must not be running before the request")

        let connected = try await ExecutableRun.run("composer-cli", ["connect", Self.speaker, "--bus", world.address])
        let pid = await owner(on: bus)
        defer { if let pid { kill(pid, SIGTERM) } }
        #expect(connected.status == 0, "composer-cli connect failed: \(connected.standardError) speakerd: \(state.read("speakerd.log") ?? "")")
        #expect(connected.standardError.isEmpty, "\(connected.standardError)")
        #expect(connected.standardOutput.contains("JBL Flip 5"), "\(connected.standardOutput)")
        try #require(pid != nil, "no speakerd owns \(SpeakerdBus.name) after the request")
        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
        let status = try await client.status()
        #expect(status.speaker == .init(address: Self.speaker, name: "JBL Flip 5", connected: true))
        try await eventually("the speaker is remembered") { state.read("state.json")?.contains(Self.speaker) == true }
        _ = world
    }

    @Test("composer-cli scan to a stopped speakerd starts it, waits for start-up to reach the adapter, and scans")
    func scanActivatesSpeakerd() async throws {
        let (state, services, _) = try prepare(.byDBusDaemon, knowsTheSpeaker: false)
        state.write("scan_seconds = 1\n", to: "speakerd.conf")
        let (world, bus) = try await worldWithSpeaker(activating: services)
        defer { bus.close() }
        let scanned = try await ExecutableRun.run("composer-cli", ["scan", "--json", "--bus", world.address])
        let pid = await owner(on: bus)
        defer { if let pid { kill(pid, SIGTERM) } }
        #expect(scanned.status == 0, "composer-cli scan failed: \(scanned.standardError)")
        #expect(scanned.standardOutput.contains("\"candidates\""), "\(scanned.standardOutput)")
        #expect(pid != nil, "no speakerd owns \(SpeakerdBus.name) after the request")
        _ = world
    }
}
