/// Where a song's audio goes: a WAV file, nowhere (null), or a real-time device.
///
/// An output *pulls* audio from a `PlaybackSource` at its own pace until the source ends, so the
/// same engine serves an offline file writer and a sound card's callback thread alike. Conforming
/// types outside this module (AudioPath's BlueALSA output) usually wrap one of ours and add
/// their own readiness check.
public protocol AudioOutput: Sendable, CustomStringConvertible {
    /// Returns when the audio path can take audio, or throws if it cannot become ready.
    ///
    /// File and null outputs are ready at once. A Bluetooth speaker is not ready merely because it
    /// is connected: the daemon's BlueALSA output waits for the speaker's PCM object on D-Bus here.
    func waitUntilReady() async throws

    /// Plays `source` to its end, or until the source is stopped or the task cancelled; throws
    /// when the output fails (device missing, disk full).
    func play(_ source: PlaybackSource) async throws

    /// The device's own sample rate, when it has one and the output knows it (a sound server's
    /// sink, a BlueALSA PCM): a song is rendered at it, so that neither the server nor ALSA's
    /// plug layer resamples it on the way (which under PipeWire costs the server several times
    /// speakerd's own CPU). Nil for a file, null, or a device that does not say.
    var deviceSampleRate: Int? { get }
}

extension AudioOutput {
    public func waitUntilReady() async throws {}
    public var deviceSampleRate: Int? { nil }
}

/// How an output that could go as fast as the CPU allows consumes audio.
public enum OutputPacing: Sendable {
    /// As fast as possible: offline rendering.
    case offline
    /// One second of audio per second of `clock`, so position advances as a listener would hear
    /// it; tests pass a `TestClock` and move time themselves.
    case realTime(any Clock<Duration>)
}
