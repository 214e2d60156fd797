import BlueZ
import Glibc
import PulseAudio
import Synchronization
import SystemPackage

/// The audio path to one speaker under the configured output, as a stream of states.
///
/// Each backend has its own idea of "ready", and each not-ready state is a reason a person can
/// act on, carried as data (``AudioPathProblem``) rather than a log line:
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
    /// Where a PulseAudio/PipeWire server may be (`pulse_server`, `sound_server_user`).
    public let soundServers: SoundServerLocation
    /// The sound server's sinks, for a server string (nil: libpulse's own choice); libpulse in
    /// production, tests pass their own.
    let soundServer: @Sendable (String?) -> AsyncStream<SoundServerState>
    /// The speaker's sink while the path is ready through one: the sink a song's stream goes to.
    public let speakerSink = SpeakerSink()
    /// What `auto` chose for the current speaker, and why: read when a song opens its output and
    /// for `status`.
    public let automaticChoice = AutomaticOutputSlot()
    /// The object path of the speaker's BlueALSA PCM while the path is ready through one: where
    /// its volume is read and set.
    public let speakerPCM = SpeakerSink()
    /// The speaker's cards speakerd switched from a headset profile to A2DP, for `status`.
    public let cardSwitches = HeadsetCardSwitches()

    public init(setting: AudioOutputSetting, blueALSA: (any BlueALSAPCMSource)?,
                soundServers: SoundServerLocation = SoundServerLocation()) {
        self.init(setting: setting, blueALSA: blueALSA, soundServers: soundServers,
                  soundServer: { PulseSinkWatcher.states(server: $0) })
    }

    init(setting: AudioOutputSetting, blueALSA: (any BlueALSAPCMSource)?,
         soundServers: SoundServerLocation = SoundServerLocation(),
         soundServer: @escaping @Sendable (String?) -> AsyncStream<SoundServerState>) {
        self.setting = setting
        self.blueALSA = blueALSA
        self.soundServers = soundServers
        self.soundServer = soundServer
    }

    /// The path to `speaker` (nil: none chosen yet), current state first.
    public func states(to speaker: (address: BluetoothAddress, name: String)?) -> AsyncStream<AudioPathState> {
        switch setting {
        case .automatic:
            guard let speaker else { return Self.just(.unknown) }
            return followAutomatic(speaker, environment: ProcessEnvironment.current)
        case .null:
            return Self.just(.ready("the null output (audio is discarded)"))
        case .alsa(let device):
            return Self.just(.ready("ALSA device \(device)"))
        case .file(let path):
            return Self.just(Self.fileState(path))
        case .pulseAudio:
            let environment = ProcessEnvironment.current
            guard let speaker else { return Self.just(Self.soundServerState(soundServers, environment: environment)) }
            let server = pulseServer(environment: environment)
            return Self.follow(soundServer(server), speaker, sink: speakerSink, location: soundServers, switches: cardSwitches,
                               switchCard: { await PulseRequests.switchCardProfile(server: server, card: $0, to: $1) })
        }
    }

    /// Whether a song's output must be opened again when its speaker comes back after a loss:
    /// true for every output bound to the speaker's own device, false for a file or the null
    /// output (opening a WAV file again would start it anew).
    ///
    /// The device the song had died with the speaker's link, even where it does not say so:
    /// - a sound server moves a stream whose sink vanished onto its default sink rather than
    ///   failing it, and the speaker's sink returns as a new one;
    /// - BlueALSA's PCM for the speaker is a new one after the link comes back, and an ALSA handle
    ///   opened on the old one may go on taking audio while the song is paused, then fail
    ///   mid-song with "No such device" (seen against real bluetoothd 5.66 and BlueALSA 4.0);
    /// - an ALSA device named by the user may be such a PCM too (`alsa:bluealsa`).
    ///
    /// Asked when the speaker is back, since `auto` may have chosen another backend by then.
    public var outputGoesWithSpeaker: Bool {
        switch setting {
        case .automatic, .pulseAudio, .alsa: return true
        case .file, .null: return false
        }
    }

    /// Whether songs go to a sound server's sink (which moves a stream whose sink vanished to its
    /// default instead of failing it). Asked when the speaker is back, since `auto` may have
    /// chosen a server by then.
    public var playsThroughSoundServer: Bool {
        switch setting {
        case .pulseAudio: return true
        case .automatic:
            if case .soundServer = automaticChoice.choice?.backend { return true }
            return false
        case .alsa, .file, .null: return false
        }
    }

    /// The server string `pulseaudio` connects to: libpulse's own choice (nil) unless speakerd's
    /// configuration names where to look, then the first place that answers (or, while none
    /// does, the first configured one, so the watcher keeps trying there).
    public func pulseServer(environment: [String: String]) -> String? {
        guard soundServers.configuredServer != nil || soundServers.user != nil else { return nil }
        switch soundServers.find(environment: environment) {
        case .reachable(let candidate): return candidate.server
        case .unreachable:
            return soundServers.candidates(environment: environment)
                .first { $0.origin != "PULSE_SERVER" && $0.origin != "the system-wide socket" }?.server
        }
    }

    /// `auto`: BlueALSA while `org.bluealsa` is on the system bus; otherwise a PulseAudio or
    /// PipeWire server if one answers where speakerd looks; otherwise the ALSA `default` device.
    /// BlueALSA's own service events drive the choice, so BlueALSA starting after speakerd (or
    /// stopping) changes it without a restart; each choice is kept in `automaticChoice` with its
    /// reason, for the song's output and for `status`.
    func followAutomatic(_ speaker: (address: BluetoothAddress, name: String),
                         environment: [String: String]) -> AsyncStream<AudioPathState> {
        let (blueALSA, slot, sink, pcm, location, soundServer) = (self.blueALSA, automaticChoice, speakerSink, speakerPCM, soundServers, self.soundServer)
        let switches = cardSwitches
        return AsyncStream { continuation in
            let task = Task {
                var fallback: Task<Void, Never>?
                /// BlueALSA is not running: a sound server if one answers, else ALSA.
                func fallBack() {
                    pcm.name = nil
                    guard fallback == nil else { return }
                    switch location.find(environment: environment) {
                    case .reachable(let candidate):
                        slot.choice = AutomaticOutput(backend: .soundServer(candidate.server),
                                                      why: "BlueALSA is not on the system bus; a sound server answers at \(candidate.server) (\(candidate.origin))")
                        let states = Self.follow(soundServer(candidate.server), speaker, sink: sink, location: location, switches: switches,
                                                 switchCard: { await PulseRequests.switchCardProfile(server: candidate.server, card: $0, to: $1) })
                        fallback = Task { for await state in states { continuation.yield(state) } }
                    case .unreachable(let problem):
                        slot.choice = AutomaticOutput(backend: .alsa("default"), why: "BlueALSA is not on the system bus and \(problem)")
                        fallback = Task {}
                        continuation.yield(.ready("ALSA device default"))
                    }
                }
                if let blueALSA {
                    do {
                        for try await set in blueALSA.serviceStates() {
                            guard let set else { fallBack(); continue }
                            fallback?.cancel()
                            fallback = nil
                            sink.name = nil
                            switches.forgetAll()
                            pcm.name = set.first { $0.isA2DPPlayback && $0.address == speaker.address }?.path
                            slot.choice = AutomaticOutput(backend: .blueALSA, why: "org.bluealsa is on the system bus")
                            continuation.yield(Self.blueALSAState(set, speaker))
                        }
                    } catch {
                        if !Task.isCancelled { fallBack() }
                    }
                } else {
                    fallBack()
                }
                // BlueALSA's events ended (or there is no system bus to watch): the fallback, if
                // any, goes on until the stream is dropped.
                await withTaskCancellationHandler {
                    await fallback?.value
                } onCancel: { [fallback] in fallback?.cancel() }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The path through BlueALSA, given its PCMs: ready once the speaker's A2DP playback PCM exists.
    static func blueALSAState(_ set: [BlueALSAPCM], _ speaker: (address: BluetoothAddress, name: String)) -> AudioPathState {
        if let pcm = set.first(where: { $0.isA2DPPlayback && $0.address == speaker.address }) {
            return .ready("BlueALSA PCM \(pcm.path)")
        }
        return .notReady(.noAudioDevice(speaker.name, "BlueALSA has no A2DP playback PCM for it yet"))
    }

    static func just(_ state: AudioPathState) -> AsyncStream<AudioPathState> {
        AsyncStream { continuation in
            continuation.yield(state)
            continuation.finish()
        }
    }

    /// The speaker's A2DP sink on the sound server, found by its properties; the sink's name is
    /// kept in `sink` for the song's stream. When the server cannot be reached, the socket check
    /// says where speakerd looked, as it did before any sink was looked for.
    ///
    /// A speaker whose card is left in a headset profile (HSP/HFP: it connected as a headset, or
    /// a phone call switched it) has no A2DP sink: its card is switched to its A2DP profile with
    /// `switchCard`, once per card (a reconnect makes a new card), so a card that keeps falling
    /// back cannot make a loop; the path's reason says what was done while the path waits, and
    /// `switches` keeps saying it (for `status`'s warnings) after the A2DP sink came, while that
    /// card is on the server.
    static func follow(_ states: AsyncStream<SoundServerState>, _ speaker: (address: BluetoothAddress, name: String),
                       sink: SpeakerSink, location: SoundServerLocation = SoundServerLocation(),
                       switches: HeadsetCardSwitches = HeadsetCardSwitches(),
                       switchCard: @escaping @Sendable (UInt32, String) async -> String? = { _, _ in "no sound server to ask" })
        -> AsyncStream<AudioPathState> {
        let (address, name) = speaker
        return AsyncStream { continuation in
            let task = Task {
                var last: AudioPathState?
                /// Each card switched (by index): what the switch answered (nil: done).
                var switched: [UInt32: String?] = [:]
                switches.forgetAll()
                for await state in states {
                    // A follower replaced by a newer one (the target changed) leaves the sink alone.
                    guard !Task.isCancelled else { break }
                    let path: AudioPathState
                    switch state {
                    case .unreachable(let problem):
                        sink.name = nil
                        path = Self.unreachable(problem, location: location, environment: ProcessEnvironment.current)
                    case .sinks(let sinks, let cards):
                        let found = sinks.first { $0.isA2DPSink(of: address) }
                        sink.name = found?.name
                        switches.keepOnly(cards.map(\.index))
                        if let found {
                            path = .ready("PulseAudio sink \(found.name)")
                        } else if let card = cards.first(where: { $0.belongs(to: address) && $0.isInHeadsetProfile }) {
                            let headset = card.activeProfile ?? "headset"
                            if let a2dp = card.a2dpProfile {
                                let done = "its card \(card.name) was in the headset profile \(headset); speakerd switched it to \(a2dp) once"
                                if switched[card.index] == nil {
                                    let answer = await switchCard(card.index, a2dp)
                                    switched[card.index] = .some(answer)
                                    if answer == nil, !Task.isCancelled { switches.record("\(name): \(done)", card: card.index) }
                                }
                                let problem = switched[card.index] ?? nil
                                path = .notReady(.noAudioDevice(name, problem.map {
                                    "its card \(card.name) is in the headset profile \(headset); switching it to \(a2dp) failed: \($0)"
                                } ?? done))
                            } else {
                                path = .notReady(.noAudioDevice(name, "its card \(card.name) is in the headset profile \(headset) and offers no A2DP profile"))
                            }
                        } else {
                            path = .notReady(.noAudioDevice(name, "no Bluetooth sink for it on the sound server yet"))
                        }
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
    static func unreachable(_ problem: String, location: SoundServerLocation = SoundServerLocation(),
                            environment: [String: String]) -> AudioPathState {
        if case .notReady(let reason) = soundServerState(location, environment: environment) { return .notReady(reason) }
        return .notReady(.soundServerUnreachable(
            "the sound server did not answer (\(problem.lowercased())): is PulseAudio or PipeWire running, and may speakerd reach it?"))
    }

    /// A WAV file can be written where its directory is writable.
    static func fileState(_ path: String) -> AudioPathState {
        let directory = FilePath(path).removingLastComponent().string
        let checked = directory.isEmpty ? "." : directory
        guard access(checked, W_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            return .notReady(.outputUnusable("cannot write \(path): \(reason.lowercased()) (directory \(checked))"))
        }
        return .ready("WAV file \(path)")
    }

    /// Whether a sound server answers where speakerd looks (``SoundServerLocation``). Only a
    /// unix socket can be checked here; a TCP server is taken as reachable (the song's stream
    /// says otherwise if not).
    static func soundServerState(_ location: SoundServerLocation, environment: [String: String]) -> AudioPathState {
        switch location.find(environment: environment) {
        case .reachable(let candidate):
            return .ready("PulseAudio server at \(candidate.server.hasPrefix("unix:") ? String(candidate.server.dropFirst(5)) : candidate.server)")
        case .unreachable(let problem):
            return .notReady(.soundServerUnreachable("\(problem): is PulseAudio or PipeWire running, and may speakerd reach it?"))
        }
    }
}

/// What `audio_output = auto` chose, and why (for the song's output and for `status`).
public struct AutomaticOutput: Sendable, Equatable {
    public enum Backend: Sendable, Equatable {
        case blueALSA
        /// A PulseAudio or PipeWire server, by its server string.
        case soundServer(String)
        case alsa(String)
    }

    public var backend: Backend
    public var why: String

    /// One line for `status`: "BlueALSA (org.bluealsa is on the system bus)".
    public var description: String {
        switch backend {
        case .blueALSA: "BlueALSA (\(why))"
        case .soundServer: "PulseAudio/PipeWire (\(why))"
        case .alsa(let device): "ALSA device \(device) (\(why))"
        }
    }
}

/// The current `auto` choice, set by the audio-path follower and read per song and by `status`.
public final class AutomaticOutputSlot: Sendable {
    private let current = Mutex<AutomaticOutput?>(nil)

    public var choice: AutomaticOutput? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
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
public enum ProcessEnvironment {
    public static var current: [String: String] {
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
