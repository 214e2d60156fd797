import BlueZ
import DBus
import Playback
import PulseAudio

/// `audio_output = pulseaudio`: the speaker's own A2DP sink on a PulseAudio or PipeWire(-Pulse)
/// server, never the default sink.
///
/// Ready once the server has a sink whose properties name *that* speaker
/// (``SoundServerSink/isA2DPSink(of:)``), followed through libpulse's sink and card events, so
/// the sink appearing and vanishing moves the path; "no sound server at …" and "no Bluetooth
/// sink for it yet" are told apart. `auto` falls back to this backend when BlueALSA is not running.
public struct SoundServerBackend: AudioBackend {
    /// Where a server may be (`pulse_server`, `sound_server_user`).
    public let location: SoundServerLocation
    /// The server's sinks and cards, for a server string (nil: libpulse's own choice); libpulse
    /// in production, tests pass their own.
    let watch: @Sendable (String?) -> AsyncStream<SoundServerState>

    public init(location: SoundServerLocation = SoundServerLocation()) {
        self.init(location: location, watch: { PulseSinkWatcher.states(server: $0) })
    }

    init(location: SoundServerLocation, watch: @escaping @Sendable (String?) -> AsyncStream<SoundServerState>) {
        self.location = location
        self.watch = watch
    }

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        let environment = ProcessEnvironment.current
        guard let speaker else { return AudioPathReport(Self.serverState(location, environment: environment)).only }
        return follow(speaker, on: server(environment: environment))
    }

    /// The path to `speaker` through `server`'s sinks (auto's fallback names the server it found).
    func follow(_ speaker: TargetSpeaker, on server: String?) -> AsyncStream<AudioPathReport> {
        Self.follow(watch(server), speaker, server: server, location: location,
                    switchCard: { await PulseRequests.switchCardProfile(server: server, card: $0, to: $1) })
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        guard route.isFound(by: Self.self) else { throw route.misrouted(to: "the sound server") }
        return DeviceOutput(.pulseAudio(server: route.server, sink: .speaker(route.device)), sampleRate: route.sampleRate)
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        guard route.isFound(by: Self.self), let sink = route.device else {
            throw .noAudioDevice(speaker: route.speaker?.description ?? "the speaker")
        }
        return PulseSinkVolume(sink: sink, server: route.server)
    }

    /// A sound server moves a stream whose sink vanished onto its default sink rather than failing
    /// it, and the speaker's sink returns as a new one.
    public var outputGoesWithSpeaker: Bool { true }

    /// The server string `pulseaudio` connects to: libpulse's own choice (nil) unless speakerd's
    /// configuration names where to look, then the first place that answers (or, while none
    /// does, the first configured one, so the watcher keeps trying there).
    public func server(environment: [String: String]) -> String? {
        guard location.configuredServer != nil || location.user != nil else { return nil }
        switch location.find(environment: environment) {
        case .reachable(let candidate): return candidate.server
        case .unreachable:
            return location.candidates(environment: environment)
                .first { $0.origin != "PULSE_SERVER" && $0.origin != "the system-wide socket" }?.server
        }
    }

    /// The speaker's A2DP sink on the sound server, found by its properties; its name is the
    /// route's device, for the song's stream and the volume. When the server cannot be reached,
    /// the socket check says where speakerd looked, as it did before any sink was looked for.
    ///
    /// A speaker whose card is left in a headset profile (HSP/HFP: it connected as a headset, or
    /// a phone call switched it) has no A2DP sink: its card is switched to its A2DP profile with
    /// `switchCard`, once per card (a reconnect makes a new card), so a card that keeps falling
    /// back cannot make a loop; the path's reason says what was done while the path waits, and
    /// the report's warnings keep saying it (for `status`) after the A2DP sink came, while that
    /// card is on the server.
    static func follow(_ states: AsyncStream<SoundServerState>, _ speaker: TargetSpeaker, server: String? = nil,
                       location: SoundServerLocation = SoundServerLocation(),
                       switchCard: @escaping @Sendable (UInt32, String) async -> String? = { _, _ in "no sound server to ask" })
        -> AsyncStream<AudioPathReport> {
        let (address, name) = (speaker.address, speaker.name)
        return AsyncStream { continuation in
            let task = Task {
                var last: AudioPathReport?
                /// Each card switched (by index): what the switch answered (nil: done).
                var switched: [UInt32: String?] = [:]
                var switches = HeadsetCardSwitches()
                for await state in states {
                    // A follower replaced by a newer one (the target changed) reports nothing more.
                    guard !Task.isCancelled else { break }
                    let path: AudioPathState
                    switch state {
                    case .unreachable(let problem):
                        path = Self.unreachable(problem, location: location, environment: ProcessEnvironment.current)
                    case .sinks(let sinks, let cards):
                        switches.keepOnly(cards.map(\.index))
                        if let found = sinks.first(where: { $0.isA2DPSink(of: address.description) }) {
                            path = .ready(AudioRoute(by: Self.self, device: found.name, server: server, speaker: address,
                                                     sampleRate: found.sampleRate, description: "PulseAudio sink \(found.name)"))
                        } else if let card = cards.first(where: { $0.belongs(to: address.description) && $0.isInHeadsetProfile }) {
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
                    let report = AudioPathReport(path, warnings: switches.warnings)
                    guard report != last else { continue }
                    last = report
                    continuation.yield(report)
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
        if case .notReady(let reason) = serverState(location, environment: environment) { return .notReady(reason) }
        return .notReady(.soundServerUnreachable(
            "the sound server did not answer (\(problem.lowercased())): is PulseAudio or PipeWire running, and may speakerd reach it?"))
    }

    /// Whether a sound server answers where speakerd looks (``SoundServerLocation``), before any
    /// speaker is chosen. Only a unix socket can be checked here; a TCP server is taken as
    /// reachable (the song's stream says otherwise if not).
    static func serverState(_ location: SoundServerLocation, environment: [String: String]) -> AudioPathState {
        switch location.find(environment: environment) {
        case .reachable(let candidate):
            let shown = candidate.server.hasPrefix("unix:") ? String(candidate.server.dropFirst(5)) : candidate.server
            return .ready(AudioRoute(by: Self.self, device: nil, server: candidate.server, description: "PulseAudio server at \(shown)"))
        case .unreachable(let problem):
            return .notReady(.soundServerUnreachable("\(problem): is PulseAudio or PipeWire running, and may speakerd reach it?"))
        }
    }
}
