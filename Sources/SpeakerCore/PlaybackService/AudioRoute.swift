import AudioPath
import BlueZ
import DBus
import Playback
import SpeakerdAPI

/// Where a song for a given speaker goes under the configured `audio_output`: the audio path's
/// states, the output one song opens, the device whose volume the speaker has, and what `auto`
/// chose and why.
///
/// The player owns one and passes it the speaker (and, for BlueALSA, the daemon's bus) as values
/// each time it asks: nothing here reads the daemon's state.
public struct AudioRoute: Sendable {
    public let setting: AudioOutputSetting
    let monitor: AudioPathMonitor
    /// BlueALSA's PCMs over the bus the daemon hands over with each speaker (nil for a route that
    /// never uses BlueALSA, as in tests).
    let blueALSA: BlueALSAAudioPath?
    private let bus: BusPCMSource?

    /// The live route: BlueALSA's PCMs over the daemon's bus (handed over with each speaker in
    /// `follow(_:over:)`), the sound servers `soundServers` names, outputs paced by `clock`.
    public static func live(setting: AudioOutputSetting, soundServers: SoundServerLocation, clock: any Clock<Duration>) -> AudioRoute {
        let bus = BusPCMSource()
        let blueALSA = BlueALSAAudioPath(source: bus, clock: clock)
        return AudioRoute(setting: setting, blueALSA: blueALSA, bus: bus, soundServers: soundServers)
    }

    /// A route with no bus of its own: `blueALSA` as given (a test's mock), or none.
    public init(setting: AudioOutputSetting, blueALSA: BlueALSAAudioPath? = nil,
                soundServers: SoundServerLocation = SoundServerLocation()) {
        self.init(setting: setting, blueALSA: blueALSA, bus: nil, soundServers: soundServers)
    }

    private init(setting: AudioOutputSetting, blueALSA: BlueALSAAudioPath?, bus: BusPCMSource?, soundServers: SoundServerLocation) {
        self.setting = setting
        self.blueALSA = blueALSA
        self.bus = bus
        self.monitor = AudioPathMonitor(setting: setting, blueALSA: blueALSA?.source, soundServers: soundServers)
    }

    /// The audio path to `speaker`, its current state first, then each change; BlueALSA is asked
    /// over `connection` (the daemon's bus, once connected).
    func follow(_ speaker: TargetSpeaker?, over connection: DBusConnection?) -> AsyncStream<AudioPathState> {
        bus?.use(connection)
        return monitor.states(to: speaker.map { ($0.address, $0.name) })
    }

    /// The output one song for `speaker` plays to: under `pulseaudio` the speaker's sink, which
    /// the gate guarantees exists when a song starts; under `auto`, what the audio path chose for
    /// the speaker (BlueALSA, the speaker's sink on a sound server, or ALSA).
    public func output(for speaker: BluetoothAddress?, clock: any Clock<Duration>) throws(PlaybackServiceError) -> any AudioOutput {
        switch setting {
        case .automatic:
            guard let speaker, let choice = monitor.automaticChoice.choice else {
                throw .startFailed(file: "the song", reason: "no speaker is connected for audio_output = auto")
            }
            switch choice.backend {
            case .blueALSA:
                guard let blueALSA else {
                    throw .startFailed(file: "the song", reason: "BlueALSA was chosen but speakerd has no system bus to reach it")
                }
                return BlueALSAOutput(address: speaker, audioPath: blueALSA)
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

    /// Whether a song paused by the speaker's loss needs its output opened again when the speaker
    /// is back (see `AudioPathMonitor.outputGoesWithSpeaker`).
    public var outputGoesWithSpeaker: Bool { monitor.outputGoesWithSpeaker }

    /// What `audio_output = auto` chose for the current speaker and why (nil under any other
    /// setting, or before a speaker is chosen).
    var automaticOutput: AutomaticOutput? {
        setting == .automatic ? monitor.automaticChoice.choice : nil
    }

    /// The speaker's headset cards switched to A2DP, while they are on the sound server.
    var warnings: [String] { monitor.cardSwitches.warnings }

    /// BlueALSA's PCM or the sound server's sink the audio path found for `speaker`.
    func volume(of speaker: TargetSpeaker?) throws(SpeakerVolumeError) -> any SpeakerVolume {
        let device: (any SpeakerVolume)?
        switch setting {
        case .automatic:
            switch monitor.automaticChoice.choice?.backend {
            case .blueALSA?, nil: device = monitor.speakerPCM.name.flatMap { blueALSA?.source.volume(ofPCM: $0) }
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
        guard let device else { throw .noAudioDevice(speaker: speaker?.address.description ?? "the speaker") }
        return device
    }
}
