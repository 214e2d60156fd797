internal import CFluidSynth

/// Owns one `fluid_audio_driver_t`: FluidSynth's real-time audio thread for ALSA or PulseAudio,
/// which calls back into a `PlaybackSource` for every period of audio.
///
/// We use FluidSynth's drivers (not our own ALSA code) because they already handle period sizing,
/// xruns and format negotiation for both back-ends; our scheduler only fills the buffers.
final class AudioDriver {
    private let handle: OpaquePointer
    private let settings: SynthSettings
    /// The source the callback renders; retained for as long as the driver thread may call it.
    private let source: Unmanaged<PlaybackSource>

    /// Starts the driver; it begins calling back at once. Returns nil when the device cannot be
    /// opened (FluidSynth logs the back-end's reason on stderr).
    init?(settings: SynthSettings, source: PlaybackSource) {
        let retained = Unmanaged.passRetained(source)
        guard let handle = settings.fluid.new_fluid_audio_driver2(settings.handle, audioDriverCallback, retained.toOpaque()) else {
            retained.release()
            return nil
        }
        self.handle = handle
        self.settings = settings
        self.source = retained
    }

    /// Deleting the driver joins its thread, so the callback never runs after this.
    deinit {
        settings.fluid.delete_fluid_audio_driver(handle)
        source.release()
    }
}

extension AudioDriver: AudioDevice {
    /// FluidSynth logs why its driver thread ended ("Error writing to PulseAudio connection")
    /// just before ending it: the latest error it logged.
    func failureReason() -> String? { FluidSynthLog.takeLastError() }
}

/// The real-time callback: no locks but the source's own mutex, no allocation, no Swift runtime
/// work beyond an unretained reference. Output buffers come pre-sized by the driver.
private func audioDriverCallback(
    data: UnsafeMutableRawPointer?, frames: Int32,
    effectCount: Int32, effects: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
    outputCount: Int32, outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
) -> Int32 {
    guard let data, let outputs, outputCount >= 2, let left = outputs[0], let right = outputs[1] else {
        return FLUID_FAILED
    }
    let source = Unmanaged<PlaybackSource>.fromOpaque(data).takeUnretainedValue()
    _ = source.renderForDevice(left: left, right: right, frames: Int(frames))
    // Any further output channels (surround set-ups) stay as the driver gave them: silent.
    return FLUID_OK
}
