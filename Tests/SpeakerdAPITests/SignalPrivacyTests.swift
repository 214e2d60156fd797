@testable import DBus
import Foundation
import Glibc
@testable import SpeakerdAPI
import TestSupport
import Testing

/// A system bus as Debian runs it (its own system.conf, started as root, dropping to
/// messagebus) with speakerd's policy, and two real Unix users: one in the speakerd group, one
/// not. Both listen for every signal speakerd sends, then try its API.
final class SystemBusWithPolicy: @unchecked Sendable {
    let directory = TemporaryDirectory()
    let address: String
    let bus: SpawnedProcess
    /// A user in the speakerd group and one outside it.
    let member: String
    let outsider: String
    private let createdGroup: Bool

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// Creates the users first: dbus-daemon resolves the policy's group names when it loads it.
    init() async throws {
        chmod(directory.path, 0o755)
        var createdGroup = false
        member = try Self.addUser(inSpeakerdGroup: true, createdGroup: &createdGroup)
        outsider = try Self.addUser(inSpeakerdGroup: false, createdGroup: &createdGroup)
        self.createdGroup = createdGroup
        let socket = directory.path + "/system_bus_socket"
        address = "unix:path=" + socket
        var config = try String(contentsOfFile: "/usr/share/dbus-1/system.conf", encoding: .utf8)
        for (old, new) in [
            ("<listen>unix:path=/run/dbus/system_bus_socket</listen>", "<listen>\(address)</listen>"),
            ("<pidfile>/run/dbus/pid</pidfile>", ""), ("<fork/>", ""), ("<standard_system_servicedirs/>", ""),
            ("<includedir>system.d</includedir>", "<includedir>\(directory.path)/system.d</includedir>"),
            ("<includedir>/etc/dbus-1/system.d</includedir>", ""),
        ] {
            guard config.contains(old) else { throw SetupFailure("Debian's system.conf has no \(old)") }
            config = config.replacingOccurrences(of: old, with: new)
        }
        try FileManager.default.createDirectory(atPath: directory.path + "/system.d", withIntermediateDirectories: false)
        directory.write(config, to: "system.conf")
        let policy = try String(contentsOfFile: Self.repository + "/systemd/dbus/io.speakerd.Daemon.conf", encoding: .utf8)
        directory.write(policy, to: "system.d/io.speakerd.Daemon.conf")
        // Test only: the stand-in speakerd runs as root here, not as the speakerd user.
        directory.write("""
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><policy user="root"><allow own="io.speakerd.Daemon"/></policy></busconfig>
            """, to: "system.d/test-owner.conf")
        let listener = try String(contentsOfFile: Self.repository + "/Tests/Tools/signal-listener.py", encoding: .utf8)
        directory.write(listener, to: "signal-listener.py")
        // Ready once it prints its address: the socket file exists from bind() on, but a
        // connect before listen() is refused (seen once in CI under a loaded machine).
        bus = try SpawnedProcess.spawn("/usr/bin/dbus-daemon", ["--config-file=\(directory.path)/system.conf", "--nofork", "--nosyslog", "--print-address=1"],
                                       standardOutput: .file(directory.path + "/bus.address"), standardError: .file(directory.path + "/bus.log"))
        let deadline = ContinuousClock.now + .seconds(10)
        while (directory.read("bus.address") ?? "").isEmpty {
            guard ContinuousClock.now < deadline else { throw SetupFailure("dbus-daemon did not start: \(directory.read("bus.log") ?? "")") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A throwaway user, in the speakerd group or not.
    private static func addUser(inSpeakerdGroup: Bool, createdGroup: inout Bool) throws -> String {
        if inSpeakerdGroup, getgrnam("speakerd") == nil {
            try run("/usr/sbin/groupadd", ["--system", "speakerd"])
            createdGroup = true
        }
        let name = "spk\(inSpeakerdGroup ? "m" : "o")\(UInt32.random(in: 0..<1_000_000))"
        try run("/usr/sbin/useradd", ["--no-create-home", "--no-user-group", "--shell", "/usr/sbin/nologin"]
                + (inSpeakerdGroup ? ["--groups", "speakerd"] : []) + [name])
        return name
    }

    /// Runs the listener as `user` until `stop(_:)` (or `seconds` at most); "ready" is its first line.
    func listen(as user: String, seconds: Double) throws -> (SpawnedProcess, String) {
        let output = directory.path + "/\(user).out"
        let process = try SpawnedProcess.spawn("/usr/bin/setpriv", [
            "--reuid=\(user)", "--regid=\(getpwnam(user).map { String($0.pointee.pw_gid) } ?? "nogroup")", "--init-groups",
            "/usr/bin/env", "-C", directory.path, "/usr/bin/python3", directory.path + "/signal-listener.py", address, String(seconds),
        ], standardOutput: .file(output), standardError: .file(output + ".err"))
        return (process, output)
    }

    /// Tells the listeners to stop once everything `server` sent has reached them: a round trip
    /// to the bus first (it has routed the signals sent before it), then SIGUSR1 (each listener
    /// makes a round trip of its own before it reports).
    func stop(_ listeners: [SpawnedProcess], after server: DBusConnection) async throws {
        _ = try await server.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", method: "GetId")
        for listener in listeners { listener.signal(SIGUSR1) }
    }

    static func run(_ program: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SetupFailure("\(program) \(arguments.joined(separator: " ")) failed") }
    }

    deinit {
        bus.signal(SIGTERM)
        for user in [member, outsider] { try? Self.run("/usr/sbin/userdel", [user]) }
        if createdGroup { try? Self.run("/usr/sbin/groupdel", ["speakerd"]) }
    }
}

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What one listener saw.
struct ListenerReport: Decodable {
    let signals: Int
    let members: [String]
    let introspect: String
    let status: String
    /// "asked" when the test stopped it, "time limit" when its safety net did.
    let stopped: String
}

@Suite("Signal privacy on a real system bus: only root and the speakerd group hear speakerd", .serialized)
struct SignalPrivacyTests {
    @Test("a speakerd group member receives PropertiesChanged and PlaybackChanged; an outsider receives none but can introspect")
    func onlyMembersHearSignals() async throws {
        guard geteuid() == 0 else {
            Issue.record("this test needs root: it starts a system bus that drops to messagebus and creates two Unix users")
            return
        }
        let system = try await SystemBusWithPolicy()
        let (member, outsider) = (system.member, system.outsider)

        // The real API object, as root, under speakerd's name.
        let server = try await DBusConnection.connect(.address(system.address))
        defer { server.close() }
        let control = RecordingControl()
        let object = try SpeakerdDBusObject.make(serving: control, initial: control.statusReport)
        try server.export(object, at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)

        let listeners = try [member, outsider].map { try system.listen(as: $0, seconds: 60) }
        for (_, output) in listeners {
            try await eventually("\(output) is listening", within: .seconds(15)) {
                (try? String(contentsOfFile: output, encoding: .utf8))?.hasPrefix("ready") == true
            }
        }
        for second in 1...3 {
            let playback = StatusReport.Playback(state: "playing", file: "secret-\(second).mid", positionSeconds: Double(second),
                                                 durationSeconds: 90)
            try object.setProperty("Playback", of: SpeakerdBus.interface, to: SpeakerdDBusRecords.encode(playback))
            try server.emitSignal(path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "PlaybackChanged",
                                  arguments: [SpeakerdDBusRecords.encode(playback)])
        }
        try await system.stop(listeners.map(\.0), after: server)
        var reports: [ListenerReport] = []
        for (process, output) in listeners {
            let status = await process.exitStatus()
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let errors = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
            #expect(status == 0, "listener failed: \(errors)")
            let last = try #require(text.split(separator: "\n").last, "no report from \(output): \(errors)")
            reports.append(try JSONDecoder().decode(ListenerReport.self, from: Data(last.utf8)))
        }
        let (heard, outside) = (reports[0], reports[1])
        #expect(heard.stopped == "asked" && outside.stopped == "asked", "a listener ran out of time before it was told to stop")
        #expect(heard.signals == 6)
        #expect(heard.members == ["PlaybackChanged", "PropertiesChanged"])
        #expect(heard.introspect == "ok" && heard.status == "ok", "\(heard)")
        #expect(outside.signals == 0, "an outsider received \(outside.members)")
        #expect(outside.introspect == "ok", "introspection must stay open")
        #expect(outside.status == "org.freedesktop.DBus.Error.AccessDenied")
    }
}
