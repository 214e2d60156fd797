import BlueZ
import Glibc
import Playback
import Readiness
import ServiceLifecycle
import SpeakerdAPI
import Synchronization
import SystemPackage

/// The daemon's `DaemonPlayback` served by a `PlaybackCoordinator`: the adapter the daemon puts in
/// `DaemonDependencies.playback`.
///
/// It owns the pieces the daemon configures once (SoundFont, output setting, BlueALSA audio
/// path) and builds each song's output for the speaker connected at that moment.
/// `speakerLost`/`speakerBack` only re-check the gate: the coordinator already follows the
/// gate's level, so the daemon's calls and the gate can never disagree.
public final class CoordinatorDaemonPlayback: DaemonPlayback {
    public let coordinator: PlaybackCoordinator
    private let soundFonts: SoundFontCache
    private let audioOutput: AudioOutputSetting
    private let audioPath: BlueALSAAudioPath?
    private let monitor: AudioPathMonitor
    private let speaker: SelectedSpeaker

    /// - Parameters:
    ///   - gate: the daemon's readiness gate.
    ///   - configuration: `audio_output`, `soundfont`, `play_timeout`, `on_speaker_lost`,
    ///     `pre_roll_ms`, `keep_alive`.
    ///   - audioPath: BlueALSA's PCMs (`BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection:))`);
    ///     needed for `audio_output = auto`.
    ///   - clock: paces file/null outputs and progress reports (the daemon's clock).
    ///   - waitingFor: what the daemon is still doing, for the play-timeout message.
    public init(
        gate: ReadinessGate<DaemonReadiness>,
        configuration: DaemonConfiguration,
        audioPath: BlueALSAAudioPath?,
        clock: any Clock<Duration> = ContinuousClock(),
        waitingFor: @escaping @Sendable () async -> String
    ) {
        let soundFonts = SoundFontCache(defaultPath: configuration.soundfont)
        let speaker = SelectedSpeaker()
        let setting = configuration.audioOutput
        let monitor = AudioPathMonitor(setting: setting, blueALSA: audioPath?.source, soundServers: configuration.soundServers)
        self.soundFonts = soundFonts
        self.audioOutput = setting
        self.audioPath = audioPath
        self.monitor = monitor
        self.speaker = speaker
        let components = PlaybackComponents.engines(
            output: { () throws -> any AudioOutput in
                try Self.output(for: setting, speaker: speaker.target?.address, monitor: monitor, audioPath: audioPath, clock: clock)
            },
            clock: clock,
            preRoll: configuration.preRoll,
            keepAliveWhilePaused: configuration.keepAlive,
            newOutputWhenSpeakerBack: { Self.playsThroughSoundServer(setting, monitor) },
            soundFont: { try await soundFonts.load() }
        )
        coordinator = PlaybackCoordinator(gate: gate, settings: PlaybackServiceSettings(configuration),
                                          components: components, waitingFor: waitingFor, clock: clock,
                                          speaker: { speaker.target.map { "\($0.name) (\($0.address))" } })
    }

    /// The output one song plays to under `setting`: under `pulseaudio` on the speaker's sink,
    /// which the gate guarantees exists when a song starts; under `auto`, what the audio path
    /// chose for the speaker (BlueALSA, the speaker's sink on a sound server, or ALSA).
    static func output(for setting: AudioOutputSetting, speaker: BluetoothAddress?, monitor: AudioPathMonitor,
                       audioPath: BlueALSAAudioPath?,
                       clock: any Clock<Duration>) throws(PlaybackServiceError) -> any AudioOutput {
        switch setting {
        case .automatic:
            guard let speaker, let choice = monitor.automaticChoice.choice else {
                throw .startFailed(file: "the song", reason: "no speaker is connected for audio_output = auto")
            }
            switch choice.backend {
            case .blueALSA:
                guard let audioPath else {
                    throw .startFailed(file: "the song", reason: "BlueALSA was chosen but speakerd has no system bus to reach it")
                }
                return BlueALSAOutput(address: speaker, audioPath: audioPath)
            case .soundServer(let server): return DeviceOutput(.pulseAudio(server: server, sink: .speaker(monitor.speakerSink.name)))
            case .alsa(let device): return DeviceOutput(.alsa(device: device))
            }
        case let .alsa(device): return DeviceOutput(.alsa(device: device))
        case .pulseAudio:
            return DeviceOutput(.pulseAudio(server: monitor.pulseServer(environment: ProcessEnvironment.current),
                                            sink: .speaker(monitor.speakerSink.name)))
        case let .file(path): return WAVFileOutput(path: path, pacing: .realTime(clock))
        case .null: return NullOutput(pacing: .realTime(clock))
        }
    }

    /// Whether songs go to a sound server's sink (which moves a stream whose sink vanished to its
    /// default instead of failing it).
    static func playsThroughSoundServer(_ setting: AudioOutputSetting, _ monitor: AudioPathMonitor) -> Bool {
        switch setting {
        case .pulseAudio: return true
        case .automatic:
            if case .soundServer = monitor.automaticChoice.choice?.backend { return true }
            return false
        default: return false
        }
    }

    /// What `audio_output = auto` chose for the current speaker and why (nil under any other
    /// setting, or before a speaker is chosen).
    public var automaticOutput: AutomaticOutput? {
        audioOutput == .automatic ? monitor.automaticChoice.choice : nil
    }

    /// The speaker's headset cards switched to A2DP, while they are on the sound server.
    public var audioPathWarnings: [String] { monitor.cardSwitches.warnings }

    public var lifecycleService: (any Service)? { coordinator }

    public func preloadSoundfont(_ path: String) async throws {
        _ = try await soundFonts.load(path: path)
    }

    public func audioPath(to target: LinkSnapshot.Target?) -> AsyncStream<ReadinessInputs.AudioPath> {
        speaker.target = target
        return monitor.states(to: target.map { ($0.address, $0.name) })
    }

    /// BlueALSA's PCM or the PulseAudio sink the audio path follower found for the speaker.
    public func speakerVolume() throws(SpeakerVolumeError) -> any SpeakerVolume {
        let device: (any SpeakerVolume)?
        switch audioOutput {
        case .automatic:
            switch monitor.automaticChoice.choice?.backend {
            case .blueALSA?, nil: device = monitor.speakerPCM.name.flatMap { audioPath?.source.volume(ofPCM: $0) }
            case .soundServer(let server)?: device = monitor.speakerSink.name.map { PulseSinkVolume(sink: $0, server: server) }
            case .alsa(let name)?: throw .notAvailable(output: "ALSA device \(name)")
            }
        case .pulseAudio:
            device = monitor.speakerSink.name.map {
                PulseSinkVolume(sink: $0, server: monitor.pulseServer(environment: ProcessEnvironment.current))
            }
        case .alsa(let name): throw .notAvailable(output: "ALSA device \(name)")
        case .file: throw .notAvailable(output: "the WAV file output")
        case .null: throw .notAvailable(output: "the null output")
        }
        guard let device else { throw .noAudioDevice(speaker: speaker.target?.address.description ?? "the speaker") }
        return device
    }

    public func abandonWaiting(because reason: String) async {
        await coordinator.abandonWaiting(because: reason)
    }

    public func play(file: FileDescriptor, displayName: String, queue: Bool,
                     blocker: @escaping @Sendable () async -> String?) async throws {
        _ = try await coordinator.play(PlayRequest(file: file, displayName: displayName, queue: queue), blocker: blocker)
    }

    public func stop() async { await coordinator.stop() }
    public func pause() async throws { try await coordinator.pause() }
    public func resume() async throws { try await coordinator.resume() }
    public func speakerLost() async { await coordinator.reconcileWithSpeaker() }
    public func speakerBack() async { await coordinator.reconcileWithSpeaker() }
    public func snapshot() async -> StatusReport.Playback { await coordinator.status().report }

    public func changes() async -> AsyncStream<StatusReport.Playback> {
        let feed = await coordinator.changes()
        return AsyncStream { continuation in
            let task = Task {
                for await change in feed { continuation.yield(change.status.report) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The speaker `audio_output = auto` plays to (and the log names): set by the daemon's
/// audio-path step, read per song.
final class SelectedSpeaker: Sendable {
    private let current = Mutex<LinkSnapshot.Target?>(nil)

    var target: LinkSnapshot.Target? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
