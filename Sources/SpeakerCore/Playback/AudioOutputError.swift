import AsyncSignals
/// Why an output could not take the song's audio.
public enum AudioOutputError: Error, Equatable, Sendable {
    /// The WAV file (or its temporary sibling) could not be created, written or renamed.
    case fileNotWritable(path: String, reason: String)
    /// FluidSynth could not open the real-time device (missing ALSA device, no PulseAudio server).
    /// `reason` is FluidSynth's own explanation when it gave one.
    case deviceUnavailable(output: String, reason: String?)
    /// The device stopped asking for audio mid-song: FluidSynth's driver thread ended (a write
    /// error: the device went away, the sound server stopped). `reason` is FluidSynth's own
    /// explanation when it gave one.
    case deviceStopped(output: String, after: Duration, reason: String?)
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
        case let .deviceStopped(output, after, reason?):
            "audio output \(output) stopped taking audio mid-song: \(reason.asClause); nothing was asked for in "
                + "\(after.spokenSeconds), so playback ended"
        case let .deviceStopped(output, after, nil):
            "audio output \(output) stopped taking audio mid-song (device gone or sound server stopped): nothing was "
                + "asked for in \(after.spokenSeconds), so playback ended"
        case let .notReady(output, reason):
            "audio output \(output) is not ready: \(reason)"
        }
    }
}

extension String {
    /// FluidSynth's message as part of our one line: no line breaks, no final period.
    fileprivate var asClause: String {
        var text = Substring(split(whereSeparator: \.isNewline).joined(separator: " "))
        while text.last == "." || text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
