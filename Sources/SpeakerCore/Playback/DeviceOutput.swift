/// A real-time sound device reached through one of FluidSynth's audio drivers: ALSA (any PCM name,
/// BlueALSA's `bluealsa:DEV=…,PROFILE=a2dp` included) or PulseAudio.
///
/// The driver's thread pulls audio from the source; this task only waits for the song to end.
/// When the song ends, is stopped, or the task is cancelled (the output is being replaced), the
/// driver is deleted, which joins its thread.
public struct DeviceOutput: AudioOutput {
    public enum Backend: Sendable, Equatable {
        case alsa(device: String)
        case pulseAudio
    }

    public let backend: Backend

    public init(_ backend: Backend) {
        self.backend = backend
    }

    public var description: String {
        switch backend {
        case let .alsa(device): "alsa:\(device)"
        case .pulseAudio: "pulseaudio"
        }
    }

    public func play(_ source: PlaybackSource) async throws {
        let settings = try SynthSettings(sampleRate: source.sampleRate)
        switch backend {
        case let .alsa(device):
            settings.set("audio.driver", "alsa")
            settings.set("audio.alsa.device", device)
        case .pulseAudio:
            settings.set("audio.driver", "pulseaudio")
            settings.set("audio.pulseaudio.media-role", "music")
        }
        FluidSynthLog.clearLastError()
        guard let driver = AudioDriver(settings: settings, source: source) else {
            source.stop()
            throw AudioOutputError.deviceUnavailable(output: description, reason: FluidSynthLog.takeLastError())
        }
        // Returns when the song ends or this task is cancelled; cancelling only detaches the
        // device (the engine replacing its output), it does not end the song.
        await source.waitUntilEnded()
        withExtendedLifetime(driver) {}
    }
}
