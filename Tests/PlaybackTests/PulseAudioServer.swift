import Foundation
import TestSupport

/// A private PulseAudio server for one test: a null sink (audio goes nowhere, but its monitor
/// source can be recorded) and a native-protocol socket in the test's own directory.
///
/// No system or session daemon is involved, so tests run in parallel, as root or not. The server
/// daemonises only once its modules are loaded (its parent waits for that), so when `start()`
/// returns clients can connect; its pid comes from its own pid file. Killed when the test ends.
final class PulseAudioServer: Sendable {
    let directory: URL
    /// The daemonised PulseAudio's pid; nil for PipeWire, whose processes are in `foreground`.
    let pid: pid_t?
    /// `pipewire` and `pipewire-pulse`, run in the foreground for this test.
    let foreground: [SpawnedProcess]
    /// What clients pass as their server (FluidSynth's `audio.pulseaudio.server`, PULSE_SERVER).
    var address: String { "unix:\(directory.path)/native" }
    /// The null sink's monitor: everything played to the server.
    static let monitor = "out.monitor"

    private init(directory: URL, pid: pid_t?, foreground: [SpawnedProcess] = []) {
        self.directory = directory
        self.pid = pid
        self.foreground = foreground
    }

    /// PipeWire and its PulseAudio-protocol server (`pipewire-pulse`) instead of PulseAudio, as
    /// Raspberry Pi OS and the Debian desktops run them, in the test's own runtime directory. No
    /// session manager (WirePlumber) is needed for null sinks; their volume is PipeWire's own.
    /// Returns once `pactl` gets an answer (every 10 ms, bounded at 30 s), with a null sink `out`
    /// standing for the box's own output, as PulseAudio's has.
    static func startPipeWire(in directory: URL) async throws -> PulseAudioServer {
        let runtime = directory.appendingPathComponent("pipewire", isDirectory: true)
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        var environment = environment(runtime)
        environment["PIPEWIRE_RUNTIME_DIR"] = runtime.path
        let processes = try ["pipewire", "pipewire-pulse"].map { name in
            try SpawnedProcess.spawn("/usr/bin/\(name)", [], environment: environment,
                                     standardError: .file(directory.appendingPathComponent("\(name).log").path))
        }
        // pipewire-pulse, like PulseAudio, puts its socket in PULSE_RUNTIME_PATH (`environment`).
        let server = PulseAudioServer(directory: runtime, pid: nil, foreground: processes)
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? await server.pactl(["info"])) == nil {
            guard ContinuousClock.now < deadline else {
                throw PulseAudioServerError("pipewire-pulse did not answer within 30 s (see pipewire-pulse.log in \(directory.path))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        _ = try await server.pactl(["load-module", "module-null-sink", "sink_name=out", "rate=44100"])
        return server
    }

    static func start(in directory: URL) async throws -> PulseAudioServer {
        let runtime = directory.appendingPathComponent("pulse", isDirectory: true)
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let launcher = try SpawnedProcess.spawn("/usr/bin/pulseaudio", [
            "--daemonize=yes", "-n", "--system=no", "--use-pid-file=yes",
            // A server left behind by a crashed test exits by itself once idle; not sooner than a
            // slow start of speakerd under AddressSanitizer on a loaded machine may take (it was
            // 20 s, and a server gone idle before parec connected failed a leak-check run).
            "--exit-idle-time=300", "--log-target=stderr",
            "-L", "module-null-sink sink_name=out rate=44100",
            "-L", "module-native-protocol-unix socket=\(runtime.path)/native auth-anonymous=1",
        ], environment: environment(runtime), standardError: .file(directory.appendingPathComponent("pulseaudio.log").path))
        let status = await launcher.exitStatus()
        guard status == 0 else { throw PulseAudioServerError("pulseaudio exited with status \(status)") }
        let pidText = try String(contentsOf: runtime.appendingPathComponent("pid"), encoding: .utf8)
        guard let pid = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw PulseAudioServerError("pulseaudio wrote no pid")
        }
        return PulseAudioServer(directory: runtime, pid: pid)
    }

    /// Starts recording the null sink's monitor as raw 16-bit stereo at 44.1 kHz; returns once the
    /// recording stream is connected (parec says so on stderr), so nothing played afterwards is
    /// missed. The wait looks at parec's log every 10 ms, bounded (30 s) so a broken parec fails
    /// the test, and says what parec said.
    func record(to path: String, from source: String = monitor) async throws -> Recording {
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
    func pactl(_ arguments: [String]) async throws -> String {
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
    func addBluetoothSink(address: String, name: String = "bluez_sink_x",
                          profile: String = "a2dp-sink") async throws -> BluetoothSink {
        let properties = "device.bus=bluetooth device.string=\(address) api.bluez5.address=\(address) "
            + "api.bluez5.profile=\(profile) device.description=Speaker"
        // PipeWire without a session manager keeps no default sink (WirePlumber would), and says so.
        if pid != nil { _ = try await pactl(["set-default-sink", "out"]) }
        let module = try await pactl(["load-module", "module-null-sink", "sink_name=\(name)", "rate=44100",
                                      "sink_properties='\(properties)'"])
        guard let moduleIndex = Int(module.trimmingCharacters(in: .whitespacesAndNewlines)),
              let index = try await sinks()[name] else {
            throw PulseAudioServerError("the Bluetooth sink \(name) did not appear (load-module said \(module))")
        }
        return BluetoothSink(name: name, index: index, module: moduleIndex)
    }

    /// Removes a sink `addBluetoothSink` added, as the speaker's disconnection does.
    func remove(_ sink: BluetoothSink) async throws {
        _ = try await pactl(["unload-module", String(sink.module)])
    }

    /// The server's sinks: name to index.
    func sinks() async throws -> [String: Int] {
        var result: [String: Int] = [:]
        for line in try await pactl(["list", "short", "sinks"]).split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count > 1, let index = Int(fields[0]) { result[String(fields[1])] = index }
        }
        return result
    }

    /// The loudest channel's volume of `sink` in percent, as `pactl get-sink-volume` prints it
    /// ("Volume: front-left: 42598 /  65% / -11.23 dB,   front-right: …").
    func volume(of sink: BluetoothSink) async throws -> Int {
        let text = try await pactl(["get-sink-volume", sink.name])
        let percents = text.matches(of: /(\d+)%/).compactMap { Int($0.output.1) }
        guard let loudest = percents.max() else { throw PulseAudioServerError("pactl get-sink-volume printed no percent: \(text)") }
        return loudest
    }

    /// Sets `sink`'s volume as another client (pavucontrol, the speaker's buttons) would.
    func setVolume(of sink: BluetoothSink, to percent: Int) async throws {
        _ = try await pactl(["set-sink-volume", sink.name, "\(percent)%"])
    }

    /// The sink index of every playback stream on the server (`pactl list short sink-inputs`).
    func sinkInputSinks() async throws -> [Int] {
        try await pactl(["list", "short", "sink-inputs"]).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            return fields.count > 1 ? Int(fields[1]) : nil
        }
    }

    /// Kills the server at once, as a crash would.
    func kill() {
        if let pid { _ = Foundation.kill(pid, SIGKILL) }
        for process in foreground { process.signal(SIGKILL) }
    }

    deinit { kill() }

    /// PulseAudio looks for its state, cookie and runtime files under these: all in the test's directory.
    private static func environment(_ directory: URL) -> [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
         "PULSE_RUNTIME_PATH": directory.path, "PULSE_STATE_PATH": directory.path]
    }
}

/// A sink `PulseAudioServer.addBluetoothSink` added: its name, index, and the module behind it.
struct BluetoothSink: Sendable {
    let name: String
    let index: Int
    let module: Int
    var monitor: String { name + ".monitor" }
}

/// A running `parec`; `finish()` stops it and returns what it recorded.
struct Recording: Sendable {
    let parec: SpawnedProcess
    let path: String

    /// Stops recording (SIGINT: parec writes out what it holds), waits for parec to exit, and
    /// returns the recording as mono samples.
    func finish() async throws -> [Float] {
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

struct PulseAudioServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
