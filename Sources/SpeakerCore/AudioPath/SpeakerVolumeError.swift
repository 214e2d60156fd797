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
