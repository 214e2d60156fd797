import Glibc
import Synchronization
import SystemPackage

/// The audio path to one speaker under the configured output, as a stream of states.
///
/// Each backend has its own idea of "ready", and each not-ready state is a reason a person can
/// act on, carried as data (``NotReadyReason``) rather than a log line:
/// - BlueALSA (`auto`): its A2DP playback PCM for *that* speaker exists on `org.bluealsa`;
///   "BlueALSA is not running" and "no PCM for it yet" are told apart.
/// - PulseAudio/PipeWire: the server has an A2DP sink whose properties name *that* speaker
///   (``SoundServerSink/isA2DPSink(of:)``), followed through libpulse's sink and card events;
///   "no sound server at …" and "no Bluetooth sink for it yet" are told apart.
/// - ALSA device: named by the user; checked when a song opens it.
/// - File: its directory is writable ("cannot write /dir/x.wav: permission denied").
/// - Null: always.
///
/// The stream starts with the current state and follows changes where the backend has events
/// (BlueALSA's PCMs, PulseAudio's sinks, appearing and vanishing); other backends are checked again on each new
/// stream, which the daemon asks for when the target changes or before serving a `play`.
public struct AudioPathMonitor: Sendable {
    public let setting: AudioOutputSetting
    public let blueALSA: (any BlueALSAPCMSource)?
    /// The sound server's sinks, for `pulseaudio` (libpulse in production; tests pass their own).
    let soundServer: @Sendable () -> AsyncStream<SoundServerState>
    /// The speaker's sink while the path is ready through one: the sink a song's stream goes to.
    public let speakerSink = SpeakerSink()
    /// The object path of the speaker's BlueALSA PCM while the path is ready through one: where
    /// its volume is read and set.
    public let speakerPCM = SpeakerSink()

    public init(setting: AudioOutputSetting, blueALSA: (any BlueALSAPCMSource)?) {
        self.init(setting: setting, blueALSA: blueALSA, soundServer: { PulseSinkWatcher.states(server: nil) })
    }

    init(setting: AudioOutputSetting, blueALSA: (any BlueALSAPCMSource)?,
         soundServer: @escaping @Sendable () -> AsyncStream<SoundServerState>) {
        self.setting = setting
        self.blueALSA = blueALSA
        self.soundServer = soundServer
    }

    /// The path to `speaker` (nil: none chosen yet), current state first.
    public func states(to speaker: (address: BluetoothAddress, name: String)?) -> AsyncStream<ReadinessInputs.AudioPath> {
        switch setting {
        case .automatic:
            guard let speaker else { return Self.just(.unknown) }
            guard let blueALSA else { return Self.just(.notReady(.blueALSANotRunning)) }
            return Self.follow(blueALSA, speaker, pcm: speakerPCM)
        case .null:
            return Self.just(.ready("the null output (audio is discarded)"))
        case .alsa(let device):
            return Self.just(.ready("ALSA device \(device)"))
        case .file(let path):
            return Self.just(Self.fileState(path))
        case .pulseAudio:
            guard let speaker else { return Self.just(Self.soundServerState(environment: ProcessEnvironment.current)) }
            return Self.follow(soundServer(), speaker, sink: speakerSink)
        }
    }

    static func just(_ state: ReadinessInputs.AudioPath) -> AsyncStream<ReadinessInputs.AudioPath> {
        AsyncStream { continuation in
            continuation.yield(state)
            continuation.finish()
        }
    }

    static func follow(_ source: any BlueALSAPCMSource, _ speaker: (address: BluetoothAddress, name: String),
                       pcm current: SpeakerSink) -> AsyncStream<ReadinessInputs.AudioPath> {
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
                        guard !Task.isCancelled else { break }  // replaced: the new follower owns `current`
                        guard let set else {
                            current.name = nil
                            yield(.notReady(.blueALSANotRunning))
                            continue
                        }
                        let pcm = set.first { $0.isA2DPPlayback && $0.address == address }
                        current.name = pcm?.path
                        if let pcm {
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

    /// The speaker's A2DP sink on the sound server, found by its properties; the sink's name is
    /// kept in `sink` for the song's stream. When the server cannot be reached, the socket check
    /// says where speakerd looked, as it did before any sink was looked for.
    static func follow(_ states: AsyncStream<SoundServerState>, _ speaker: (address: BluetoothAddress, name: String),
                       sink: SpeakerSink) -> AsyncStream<ReadinessInputs.AudioPath> {
        let (address, name) = speaker
        return AsyncStream { continuation in
            let task = Task {
                var last: ReadinessInputs.AudioPath?
                for await state in states {
                    // A follower replaced by a newer one (the target changed) leaves the sink alone.
                    guard !Task.isCancelled else { break }
                    let path: ReadinessInputs.AudioPath
                    switch state {
                    case .unreachable(let problem):
                        sink.name = nil
                        path = Self.unreachable(problem, environment: ProcessEnvironment.current)
                    case .sinks(let sinks):
                        let found = sinks.first { $0.isA2DPSink(of: address) }
                        sink.name = found?.name
                        path = found.map { .ready("PulseAudio sink \($0.name)") }
                            ?? .notReady(.noAudioDevice(name, "no Bluetooth sink for it on the sound server yet"))
                    }
                    guard path != last else { continue }
                    last = path
                    continuation.yield(path)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Why a sound server libpulse could not reach is unreachable: where the socket was looked
    /// for when that explains it, else libpulse's own words.
    static func unreachable(_ problem: String, environment: [String: String]) -> ReadinessInputs.AudioPath {
        if case .notReady(let reason) = soundServerState(environment: environment) { return .notReady(reason) }
        return .notReady(.soundServerUnreachable(
            "the sound server did not answer (\(problem.lowercased())): is PulseAudio or PipeWire running, and may speakerd reach it?"))
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

/// The name of the device the audio path to the speaker currently goes through (nil: none): the
/// sink, set by the PulseAudio path's follower and read when a song opens its stream, or the
/// BlueALSA PCM's object path, read when the volume changes.
public final class SpeakerSink: Sendable {
    private let current = Mutex<String?>(nil)

    public var name: String? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
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
