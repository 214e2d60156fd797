import Glibc
import SystemPackage

/// The audio path to one speaker under the configured output, as a stream of states.
///
/// Each backend has its own idea of "ready", and each not-ready state is a reason a person can
/// act on, carried as data (``NotReadyReason``) rather than a log line:
/// - BlueALSA (`auto`): its A2DP playback PCM for *that* speaker exists on `org.bluealsa`;
///   "BlueALSA is not running" and "no PCM for it yet" are told apart.
/// - PulseAudio/PipeWire: the server's socket answers ("no sound server at …" otherwise).
/// - ALSA device: named by the user; checked when a song opens it.
/// - File: its directory is writable ("cannot write /dir/x.wav: permission denied").
/// - Null: always.
///
/// The stream starts with the current state and follows changes where the backend has events
/// (BlueALSA's PCMs appearing and vanishing); other backends are checked again on each new
/// stream, which the daemon asks for when the target changes or before serving a `play`.
public struct AudioPathMonitor: Sendable {
    public let setting: AudioOutputSetting
    public let blueALSA: (any BlueALSAPCMSource)?

    public init(setting: AudioOutputSetting, blueALSA: (any BlueALSAPCMSource)?) {
        self.setting = setting
        self.blueALSA = blueALSA
    }

    /// The path to `speaker` (nil: none chosen yet), current state first.
    public func states(to speaker: (address: BluetoothAddress, name: String)?) -> AsyncStream<ReadinessInputs.AudioPath> {
        switch setting {
        case .automatic:
            guard let speaker else { return Self.just(.unknown) }
            guard let blueALSA else { return Self.just(.notReady(.blueALSANotRunning)) }
            return Self.follow(blueALSA, speaker)
        case .null:
            return Self.just(.ready("the null output (audio is discarded)"))
        case .alsa(let device):
            return Self.just(.ready("ALSA device \(device)"))
        case .file(let path):
            return Self.just(Self.fileState(path))
        case .pulseAudio:
            return Self.just(Self.soundServerState(environment: ProcessEnvironment.current))
        }
    }

    static func just(_ state: ReadinessInputs.AudioPath) -> AsyncStream<ReadinessInputs.AudioPath> {
        AsyncStream { continuation in
            continuation.yield(state)
            continuation.finish()
        }
    }

    static func follow(_ source: any BlueALSAPCMSource,
                       _ speaker: (address: BluetoothAddress, name: String)) -> AsyncStream<ReadinessInputs.AudioPath> {
        let (address, name) = speaker
        return AsyncStream { continuation in
            let task = Task {
                var last: ReadinessInputs.AudioPath?
                func yield(_ state: ReadinessInputs.AudioPath) {
                    guard state != last else { return }
                    last = state
                    continuation.yield(state)
                }
                do {
                    for try await set in source.serviceStates() {
                        guard let set else {
                            yield(.notReady(.blueALSANotRunning))
                            continue
                        }
                        if let pcm = set.first(where: { $0.isA2DPPlayback && $0.address == address }) {
                            yield(.ready("BlueALSA PCM \(pcm.path)"))
                        } else {
                            yield(.notReady(.noAudioDevice(name, "BlueALSA has no A2DP playback PCM for it yet")))
                        }
                    }
                } catch {
                    if !Task.isCancelled { yield(.notReady(.blueALSANotRunning)) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A WAV file can be written where its directory is writable.
    static func fileState(_ path: String) -> ReadinessInputs.AudioPath {
        let directory = FilePath(path).removingLastComponent().string
        let checked = directory.isEmpty ? "." : directory
        guard access(checked, W_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            return .notReady(.outputUnusable("cannot write \(path): \(reason.lowercased()) (directory \(checked))"))
        }
        return .ready("WAV file \(path)")
    }

    /// Where a PulseAudio client looks for its server: `PULSE_SERVER`, else the user's runtime
    /// directory, else the system-wide socket. Only a unix socket can be checked here; a TCP
    /// server is taken as reachable (the song's stream says otherwise if not).
    static func soundServerState(environment: [String: String]) -> ReadinessInputs.AudioPath {
        var candidates: [String] = []
        if let server = environment["PULSE_SERVER"], !server.isEmpty {
            for entry in server.split(separator: " ") {
                let text = String(entry)
                if text.hasPrefix("unix:") { candidates.append(String(text.dropFirst(5))) }
                else if text.hasPrefix("/") { candidates.append(text) }
                else { return .ready("PulseAudio server \(text)") }
            }
        } else {
            if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { candidates.append(runtime + "/pulse/native") }
            candidates.append("/run/pulse/native")
            candidates.append("/var/run/pulse/native")
        }
        var problems: [String] = []
        for path in candidates {
            if let problem = LocalProbes.connectUnix(name: path, abstract: false) {
                problems.append("\(path) (\(problem.lowercased()))")
            } else {
                return .ready("PulseAudio server at \(path)")
            }
        }
        return .notReady(.soundServerUnreachable(
            "no sound server at \(problems.joined(separator: " or ")): is PulseAudio or PipeWire running, and may speakerd reach it?"))
    }
}

/// The process environment as a dictionary (Glibc's `environ`).
enum ProcessEnvironment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
