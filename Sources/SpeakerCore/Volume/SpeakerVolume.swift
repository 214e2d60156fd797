/// The speaker's own volume, on the audio device speakerd plays to: BlueALSA's PCM or the
/// speaker's sink on PulseAudio/PipeWire. Both forward it to the speaker over AVRCP absolute
/// volume where the speaker supports it, so the level is the speaker's, not a software gain on
/// our samples (which would waste the speaker's range and add noise at low levels).
///
/// One value per device, read and written in percent; each backend maps percent to its own
/// scale (BlueALSA 0…127, PulseAudio's 0…65536 "normal").
public protocol SpeakerVolume: Sendable {
    /// The device's current volume in percent (the loudest channel).
    func percent() async throws(SpeakerVolumeError) -> Int
    /// Sets every channel to `percent` (0…100) and returns what the device reports afterwards.
    func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int
    /// The device, for messages ("PulseAudio sink bluez_sink…", "BlueALSA PCM /org/bluealsa/…").
    var deviceDescription: String { get }
}

/// Why the speaker's volume could not be read or set.
public enum SpeakerVolumeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No speaker is chosen or connected.
    case noSpeaker
    /// The speaker is connected but has no audio device yet (no sink, no PCM).
    case noAudioDevice(speaker: String)
    /// The configured output has no hardware volume (a WAV file, the null output, a raw ALSA device).
    case notAvailable(output: String)
    /// The device refused or did not answer; `reason` is one line from its server.
    case failed(device: String, reason: String)

    public var description: String {
        switch self {
        case .noSpeaker:
            "no speaker is connected: 'composer-cli connect' first"
        case .noAudioDevice(let speaker):
            "\(speaker) has no audio device yet (no Bluetooth sink or BlueALSA PCM); try again once 'composer-cli status' says ready"
        case .notAvailable(let output):
            "\(output) has no hardware volume; use audio_output = auto (BlueALSA) or pulseaudio"
        case let .failed(device, reason):
            // A server's message may run to several lines (a Python traceback from a mock); the first says what.
            "cannot change the volume of \(device): \(reason.split(separator: "\n").first.map(String.init) ?? reason)"
        }
    }
}
