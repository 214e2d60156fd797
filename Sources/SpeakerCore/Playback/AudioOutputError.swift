/// Why an output could not take the song's audio.
public enum AudioOutputError: Error, Equatable, Sendable {
    /// The WAV file (or its temporary sibling) could not be created, written or renamed.
    case fileNotWritable(path: String, reason: String)
    /// FluidSynth could not open the real-time device (missing ALSA device, no PulseAudio server).
    /// `reason` is FluidSynth's own explanation when it gave one.
    case deviceUnavailable(output: String, reason: String?)
    /// The audio path never became ready (raised by readiness checks such as BlueALSA's).
    case notReady(output: String, reason: String)
}

extension AudioOutputError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .fileNotWritable(path, reason):
            "cannot write WAV file \(path): \(reason)"
        case let .deviceUnavailable(output, reason?):
            "audio output \(output) could not be opened: \(reason)"
        case let .deviceUnavailable(output, nil):
            "audio output \(output) could not be opened (device missing, busy, or no sound server running)"
        case let .notReady(output, reason):
            "audio output \(output) is not ready: \(reason)"
        }
    }
}
