import Foundation

/// A private PulseAudio server for one test: a null sink (audio goes nowhere, but its monitor
/// source can be recorded) and a native-protocol socket in the test's own directory.
///
/// No system or session daemon is involved, so tests run in parallel, as root or not. The server
/// daemonises only once its modules are loaded (its parent waits for that), so when `start()`
/// returns clients can connect; its pid comes from its own pid file.
final class PulseAudioServer: Sendable {
    let directory: URL
    let pid: pid_t
    /// What clients pass as their server (FluidSynth's `audio.pulseaudio.server`, PULSE_SERVER).
    var address: String { "unix:\(directory.path)/native" }
    /// The null sink's monitor: everything played to the server.
    static let monitor = "out.monitor"

    private init(directory: URL, pid: pid_t) {
        self.directory = directory
        self.pid = pid
    }

    static func start(in directory: URL) async throws -> PulseAudioServer {
        let runtime = directory.appendingPathComponent("pulse", isDirectory: true)
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let status = try await run("/usr/bin/pulseaudio", [
            "--daemonize=yes", "-n", "--system=no", "--use-pid-file=yes",
            // A server left behind by a crashed test exits by itself once idle.
            "--exit-idle-time=20", "--log-target=stderr",
            "-L", "module-null-sink sink_name=out rate=44100",
            "-L", "module-native-protocol-unix socket=\(runtime.path)/native auth-anonymous=1",
        ], environment: environment(runtime))
        guard status == 0 else { throw PulseAudioServerError("pulseaudio exited with status \(status)") }
        let pidText = try String(contentsOf: runtime.appendingPathComponent("pid"), encoding: .utf8)
        guard let pid = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw PulseAudioServerError("pulseaudio wrote no pid")
        }
        return PulseAudioServer(directory: runtime, pid: pid)
    }

    /// Starts recording the null sink's monitor as raw 16-bit stereo at 44.1 kHz; returns once the
    /// recording stream is connected (parec says so on stderr), so nothing played afterwards is
    /// missed. Raw, because parec is ended with SIGKILL: a child of the test process inherits the
    /// concurrency pool's blocked signals, so it never sees SIGINT (that would complete a WAV).
    func record(to path: String) async throws -> Recording {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/parec")
        process.arguments = ["--verbose", "--server=\(address)", "--device=\(Self.monitor)", "--raw", "--latency-msec=20",
                             "--format=s16le", "--rate=44100", "--channels=2", path]
        process.environment = Self.environment(directory)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let connected = await Task.detached {
            var seen = Data()
            while !seen.contains(Data("Connected to device".utf8)) {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { return false }
                seen += chunk
            }
            return true
        }.value
        // Keep draining parec's progress lines so it never blocks on a full pipe.
        errors.fileHandleForReading.readabilityHandler = { handle in _ = handle.availableData }
        guard connected else { throw PulseAudioServerError("parec could not connect to \(address)") }
        return Recording(process: process, path: path, errors: errors)
    }

    /// Kills the server at once, as a crash would.
    func kill() {
        _ = Foundation.kill(pid, SIGKILL)
    }

    deinit { kill() }

    /// PulseAudio looks for its state, cookie and runtime files under these: all in the test's directory.
    private static func environment(_ directory: URL) -> [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
         "PULSE_RUNTIME_PATH": directory.path, "PULSE_STATE_PATH": directory.path]
    }

    private static func run(_ executable: String, _ arguments: [String], environment: [String: String]) async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
    }
}

/// A running `parec`; `finish()` stops it and returns what it recorded.
struct Recording: @unchecked Sendable {
    let process: Process
    let path: String
    let errors: Pipe

    /// Stops recording, waits for parec to exit, and returns the recording as mono samples.
    func finish() async throws -> [Float] {
        _ = kill(process.processIdentifier, SIGKILL)
        await Task.detached { self.process.waitUntilExit() }.value
        errors.fileHandleForReading.readabilityHandler = nil
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
