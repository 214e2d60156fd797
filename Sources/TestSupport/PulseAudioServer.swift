import Foundation
import Testing

/// Which sound server a test runs: PulseAudio itself, or PipeWire with WirePlumber behind
/// pipewire-pulse (the default stack on Raspberry Pi OS and Debian desktops), which speaks the
/// same native protocol, so speakerd and the test's `pactl`/`parec` reach either alike.
public enum SoundServerKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pulseAudio
    case pipeWire

    public var testDescription: String { self == .pulseAudio ? "PulseAudio" : "PipeWire (pipewire-pulse, WirePlumber)" }
}

/// A private sound server for one test: a null sink `out` (audio goes nowhere, but its monitor
/// source can be recorded) standing for the box's built-in output, and a native-protocol socket
/// in the test's own directory.
///
/// No system or session daemon is involved, so tests run in parallel, as root or not.
/// - PulseAudio daemonises only once its modules are loaded (its parent waits for that), so when
///   `start()` returns clients can connect; its pid comes from its own pid file.
/// - PipeWire runs as the three programs a desktop session runs (pipewire, wireplumber,
///   pipewire-pulse) on a private session bus of their own (WirePlumber will not start without
///   one); `start()` returns once pipewire-pulse answers and `out` exists.
/// Every process is killed when the test ends.
public final class PulseAudioServer: Sendable {
    public let kind: SoundServerKind
    public let directory: URL
    /// PulseAudio's daemon, by the pid in its pid file (it is not our child).
    private let daemon: pid_t?
    /// PipeWire's programs, our children (signalled only while unreaped).
    private let stack: [SpawnedProcess]
    /// What clients pass as their server (FluidSynth's `audio.pulseaudio.server`, PULSE_SERVER).
    public var address: String { "unix:\(directory.path)/pulse/native" }
    /// The null sink's monitor: everything played to the server.
    public static let monitor = "out.monitor"

    private init(kind: SoundServerKind, directory: URL, daemon: pid_t? = nil, stack: [SpawnedProcess] = []) {
        self.kind = kind
        self.directory = directory
        self.daemon = daemon
        self.stack = stack
    }

    public static func start(in directory: URL, kind: SoundServerKind = .pulseAudio) async throws -> PulseAudioServer {
        let runtime = directory.appendingPathComponent("sound", isDirectory: true)
        try FileManager.default.createDirectory(at: runtime.appendingPathComponent("pulse"), withIntermediateDirectories: true)
        switch kind {
        case .pulseAudio: return try await startPulseAudio(runtime: runtime, log: directory)
        case .pipeWire: return try await startPipeWire(runtime: runtime, log: directory)
        }
    }

    private static func startPulseAudio(runtime: URL, log: URL) async throws -> PulseAudioServer {
        let launcher = try SpawnedProcess.spawn("/usr/bin/pulseaudio", [
            "--daemonize=yes", "-n", "--system=no", "--use-pid-file=yes",
            // A server left behind by a crashed test exits by itself once idle; not sooner than a
            // slow start of speakerd under AddressSanitizer on a loaded machine may take (it was
            // 20 s, and a server gone idle before parec connected failed a leak-check run).
            "--exit-idle-time=300", "--log-target=stderr",
            "-L", "module-null-sink sink_name=out rate=44100",
            "-L", "module-native-protocol-unix socket=\(runtime.path)/pulse/native auth-anonymous=1",
        ], environment: environment(runtime), standardError: .file(log.appendingPathComponent("pulseaudio.log").path))
        let status = await launcher.exitStatus()
        guard status == 0 else { throw PulseAudioServerError("pulseaudio exited with status \(status)") }
        let pidText = try String(contentsOf: runtime.appendingPathComponent("pulse/pid"), encoding: .utf8)
        guard let pid = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw PulseAudioServerError("pulseaudio wrote no pid")
        }
        return PulseAudioServer(kind: .pulseAudio, directory: runtime, daemon: pid)
    }

    /// pipewire, then wireplumber and pipewire-pulse, on a private session bus; each logs to its
    /// own file in the test's directory. Any step that does not come up within 30 s fails the
    /// test with the last line that program wrote, after killing what did start.
    private static func startPipeWire(runtime: URL, log: URL) async throws -> PulseAudioServer {
        var environment = Self.environment(runtime)
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(runtime.path)/bus"
        environment["PIPEWIRE_RUNTIME_DIR"] = runtime.path
        environment["XDG_CONFIG_HOME"] = runtime.appendingPathComponent("config").path
        environment["XDG_STATE_HOME"] = runtime.appendingPathComponent("state").path
        var started: [SpawnedProcess] = []
        func launch(_ program: String, _ arguments: [String] = [], standardOutput: SpawnedProcess.Stream = .null) throws {
            started.append(try SpawnedProcess.spawn(program, arguments, environment: environment, standardOutput: standardOutput,
                                                    standardError: .file(log.appendingPathComponent("\((program as NSString).lastPathComponent).log").path)))
        }
        do {
            // Ready once it prints its address (after listen()); its socket file appears at
            // bind(), and a connect in between is refused.
            let printed = runtime.appendingPathComponent("bus.address").path
            try launch("/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(runtime.path)/bus", "--print-address=1"],
                       standardOutput: .file(printed))
            try await waitFor("the session bus", log: log, program: "dbus-daemon") {
                ((try? String(contentsOfFile: printed, encoding: .utf8)) ?? "").contains("unix:")
            }
            try launch("/usr/bin/pipewire")
            try await waitFor("pipewire's socket", log: log, program: "pipewire") {
                FileManager.default.fileExists(atPath: runtime.appendingPathComponent("pipewire-0").path)
            }
            try launch("/usr/bin/wireplumber")
            try launch("/usr/bin/pipewire-pulse")
            let server = PulseAudioServer(kind: .pipeWire, directory: runtime, stack: started)
            try await waitFor("pipewire-pulse", log: log, program: "pipewire-pulse") {
                (try? await server.pactl(["info"])) != nil
            }
            _ = try await server.pactl(["load-module", "module-null-sink", "sink_name=out", "rate=44100"])
            // pipewire-pulse answers set-default-sink "Not supported" until WirePlumber has made
            // its `default` metadata (seen in CI on a loaded machine): asked again until it takes.
            try await waitFor("the sink out, made the default", log: log, program: "wireplumber") {
                guard (try? await server.sinks())?["out"] != nil else { return false }
                return (try? await server.pactl(["set-default-sink", "out"])) != nil
            }
            return server
        } catch {
            for process in started { process.signal(SIGKILL) }
            throw error
        }
    }

    private static func waitFor(_ what: String, log: URL, program: String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while await !condition() {
            guard ContinuousClock.now < deadline else {
                let said = (try? String(contentsOf: log.appendingPathComponent("\(program).log"), encoding: .utf8))?
                    .split(separator: "\n").last ?? "nothing"
                throw PulseAudioServerError("\(what) did not come up within 30 s; \(program) said: \(said)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts recording the null sink's monitor as raw 16-bit stereo at 44.1 kHz; returns once the
    /// recording stream is connected (parec says so on stderr), so nothing played afterwards is
    /// missed. The wait looks at parec's log every 10 ms, bounded (30 s) so a broken parec fails
    /// the test, and says what parec said.
    public func record(to path: String, from source: String = monitor) async throws -> Recording {
        let log = path + ".log"
        let parec = try SpawnedProcess.spawn("/usr/bin/parec", [
            "--verbose", "--server=\(address)", "--device=\(source)", "--raw", "--latency-msec=20",
            "--format=s16le", "--rate=44100", "--channels=2", path,
        ], environment: Self.environment(directory), standardError: .file(log))
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? String(contentsOfFile: log, encoding: .utf8))?.contains("Connected to device") != true {
            guard ContinuousClock.now < deadline else {
                parec.signal(SIGKILL)
                _ = await parec.exitStatus()
                let said = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").last ?? "nothing"
                throw PulseAudioServerError("parec could not connect to \(address) within 30 s; it said: \(said)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return Recording(parec: parec, path: path)
    }

    /// Runs `pactl` against this server and returns what it printed; throws with what it said
    /// when it fails.
    public func pactl(_ arguments: [String]) async throws -> String {
        let output = directory.appendingPathComponent("pactl-\(UUID().uuidString)").path
        let process = try SpawnedProcess.spawn("/usr/bin/pactl", ["--server=\(address)"] + arguments,
                                               environment: Self.environment(directory),
                                               standardOutput: .file(output), standardError: .file(output + ".err"))
        let status = await process.exitStatus()
        defer {
            try? FileManager.default.removeItem(atPath: output)
            try? FileManager.default.removeItem(atPath: output + ".err")
        }
        guard status == 0 else {
            let said = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
            throw PulseAudioServerError("pactl \(arguments.joined(separator: " ")) exited with status \(status): \(said)")
        }
        return try String(contentsOfFile: output, encoding: .utf8)
    }

    /// Adds what a Bluetooth speaker's A2DP sink looks like on the server: a null sink carrying
    /// the properties PipeWire (`api.bluez5.*`) and PulseAudio's bluez5 module (`device.string`)
    /// give one. The server would make a new Bluetooth sink its default (by priority), so `out`,
    /// the box's own output, is first made the chosen default, as a user's chosen default stays:
    /// a stream that sits on the speaker's sink is there because it asked for it.
    /// `rate` is the sink's sample rate: an A2DP link's, 48 kHz under PipeWire with most speakers.
    public func addBluetoothSink(address: String, name: String = "bluez_sink_x",
                          profile: String = "a2dp-sink", rate: Int = 44_100) async throws -> BluetoothSink {
        let properties = "device.bus=bluetooth device.string=\(address) api.bluez5.address=\(address) "
            + "api.bluez5.profile=\(profile) device.description=Speaker"
        _ = try await pactl(["set-default-sink", "out"])
        let module = try await pactl(["load-module", "module-null-sink", "sink_name=\(name)", "rate=\(rate)",
                                      "sink_properties='\(properties)'"])
        guard let moduleIndex = Int(module.trimmingCharacters(in: .whitespacesAndNewlines)),
              let index = try await sinks()[name] else {
            throw PulseAudioServerError("the Bluetooth sink \(name) did not appear (load-module said \(module))")
        }
        return BluetoothSink(name: name, index: index, module: moduleIndex)
    }

    /// Removes a sink `addBluetoothSink` added, as the speaker's disconnection does.
    public func remove(_ sink: BluetoothSink) async throws {
        _ = try await pactl(["unload-module", String(sink.module)])
    }

    /// The server's sinks: name to index.
    public func sinks() async throws -> [String: Int] {
        var result: [String: Int] = [:]
        for line in try await pactl(["list", "short", "sinks"]).split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count > 1, let index = Int(fields[0]) { result[String(fields[1])] = index }
        }
        return result
    }

    /// The loudest channel's volume of `sink` in percent, as `pactl get-sink-volume` prints it
    /// ("Volume: front-left: 42598 /  65% / -11.23 dB,   front-right: …").
    public func volume(of sink: BluetoothSink) async throws -> Int {
        let text = try await pactl(["get-sink-volume", sink.name])
        let percents = text.matches(of: /(\d+)%/).compactMap { Int($0.output.1) }
        guard let loudest = percents.max() else { throw PulseAudioServerError("pactl get-sink-volume printed no percent: \(text)") }
        return loudest
    }

    /// Sets `sink`'s volume as another client (pavucontrol, the speaker's buttons) would.
    public func setVolume(of sink: BluetoothSink, to percent: Int) async throws {
        _ = try await pactl(["set-sink-volume", sink.name, "\(percent)%"])
    }

    /// The sink index of every playback stream on the server.
    public func sinkInputSinks() async throws -> [Int] {
        try await sinkInputFields().compactMap { $0.count > 1 ? Int($0[1]) : nil }
    }

    /// The sample rate of each stream playing on the server (its sample spec, "float32le 2ch
    /// 48000Hz"), in the server's order.
    public func sinkInputRates() async throws -> [Int] {
        try await sinkInputFields().compactMap { fields in
            fields.first { $0.hasSuffix("Hz") }?.split(separator: " ").last.flatMap { Int($0.dropLast(2)) }
        }
    }

    /// `pactl list short sink-inputs`, a stream a line, split at its tabs.
    private func sinkInputFields() async throws -> [[Substring]] {
        try await pactl(["list", "short", "sink-inputs"]).split(separator: "\n").map { $0.split(separator: "\t") }
    }

    /// Kills the server at once, as a crash would (every program of a PipeWire stack).
    public func kill() {
        if let daemon { _ = Foundation.kill(daemon, SIGKILL) }
        for process in stack { process.signal(SIGKILL) }
    }

    deinit { kill() }

    /// PulseAudio looks for its state, cookie and runtime files under these: all in the test's directory.
    private static func environment(_ directory: URL) -> [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
         "PULSE_RUNTIME_PATH": directory.appendingPathComponent("pulse").path, "PULSE_STATE_PATH": directory.path]
    }
}

/// A sink `PulseAudioServer.addBluetoothSink` added: its name, index, and the module behind it.
public struct BluetoothSink: Sendable {
    public let name: String
    public let index: Int
    public let module: Int
    public var monitor: String { name + ".monitor" }
}

/// A running `parec`; `finish()` stops it and returns what it recorded.
public struct Recording: Sendable {
    let parec: SpawnedProcess
    public let path: String

    /// When the first sample above -60 dBFS reached the recording file, read as it grows (every
    /// 2 ms): a time on the test's clock that comes after the sound was played, never before, so
    /// "not sooner than" checks need no alignment between the recording and the clock.
    public func firstSoundArrival(timeout: Duration = .seconds(30)) async throws -> ContinuousClock.Instant {
        let deadline = ContinuousClock.now + timeout
        var offset: UInt64 = 0
        while ContinuousClock.now < deadline {
            if let handle = FileHandle(forReadingAtPath: path) {
                defer { try? handle.close() }
                try handle.seek(toOffset: offset)
                let data = handle.readDataToEndOfFile()
                let whole = data.count / 2 * 2
                let loud = data.prefix(whole).withUnsafeBytes { raw in
                    raw.bindMemory(to: Int16.self).contains { abs(Int(Int16(littleEndian: $0))) > 33 }
                }
                if loud { return ContinuousClock.now }
                offset += UInt64(whole)
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw PulseAudioServerError("no sound reached \(path) within \(timeout)")
    }

    /// Stops recording (SIGINT: parec writes out what it holds), waits for parec to exit, and
    /// returns the recording as mono samples.
    public func finish() async throws -> [Float] {
        parec.signal(SIGINT)
        _ = await parec.exitStatus()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        return bytes.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Int16.self)
            return stride(from: 0, to: samples.count - 1, by: 2).map { index in
                (Float(Int16(littleEndian: samples[index])) + Float(Int16(littleEndian: samples[index + 1]))) / 65_536
            }
        }
    }
}

public struct PulseAudioServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
