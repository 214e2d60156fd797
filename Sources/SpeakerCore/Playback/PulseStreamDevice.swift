import PulseAudio

/// The speaker's sink as a device: speakerd's own libpulse stream (``PulseStream``), which the
/// sound server ends rather than moves to its default sink (the box's own output) when the sink
/// goes away. FluidSynth's pulseaudio driver cannot ask for that, so it plays only to
/// a server's default sink, for a user who named no sink.
///
/// The stream pulls from the source as FluidSynth's driver does (`renderForDevice`). A stream the
/// server ended asks for nothing more, so `DeviceOutput`'s watchdog notices it like a driver
/// thread that died: by then a sink that went away has paused the song (the audio path dropped),
/// which then outlives its device, and a song still playing fails with the server's reason.
final class PulseStreamDevice {
    private let stream: PulseStream

    /// Opens the stream to `sink`; returns once the server plays it (it already pulls from
    /// `source`), or throws why not (no server, no such sink).
    init(server: String?, sink: String, source: PlaybackSource, output: String) async throws(AudioOutputError) {
        do {
            stream = try await PulseStream.open(
                server: server, sink: sink, sampleRate: source.sampleRate,
                period: DeviceOutput.periodFrames, periods: DeviceOutput.periods,
                maxPeriods: DeviceOutput.maxPeriods, name: "speakerd",
                latency: { source.reportDeviceLatency(microseconds: $0) },
                underflow: { source.noteOutputUnderflow(atStreamFrame: $0) }) { left, right, frames in
                _ = source.renderForDevice(left: left, right: right, frames: frames)
            }
        } catch {
            throw .deviceUnavailable(output: output, reason: Self.explain(error))
        }
    }

    /// Closing stops the renders at once; the stream's teardown goes on in its own thread.
    deinit { stream.close() }

    /// libpulse's sentence, with what it means for speakerd.
    private static func explain(_ error: PulseStreamError) -> String {
        let reason = error.reason.lowercased()
        switch reason {
        case "no such entity": return "the sound server has no sink \(error.sink) (\(reason))"
        case "connection refused", "access denied":
            // libpulse only says "Connection refused": say what is missing.
            return "\(reason); is a PulseAudio server running for this user (PULSE_SERVER names another)?"
        default: return reason
        }
    }
}

extension PulseStreamDevice: AudioDevice {
    /// The server's reason for ending the stream (its sink went away, the connection failed).
    func failureReason() -> String? {
        guard let end = stream.end, end != .closed else { return nil }
        return end.description
    }
}
