internal import CFluidSynth

/// Owns one `fluid_settings_t`: the key/value store FluidSynth reads when it creates a synthesiser
/// or an audio driver.
///
/// Settings are copied by FluidSynth at creation time only for some keys, so a settings object must
/// outlive whatever was created from it; `Synthesizer` and `AudioDriver` keep theirs alive.
final class SynthSettings {
    let handle: OpaquePointer
    /// The library's functions, for this object and the ones created from it.
    let fluid: FluidSynthLibrary.API

    /// Creates settings with FluidSynth's defaults, the given sample rate, and the thread-safe API
    /// switched off: every call into a synthesiser of ours is already serialised (a `PlaybackSource`
    /// holds its synthesiser behind a `Mutex`), so FluidSynth's own lock would only cost time.
    init(sampleRate: Int) throws(SoundFontError) {
        let fluid = try FluidSynthLibrary.api()
        guard let handle = fluid.new_fluid_settings() else { throw .outOfMemory("FluidSynth settings") }
        self.handle = handle
        self.fluid = fluid
        set("synth.sample-rate", Double(sampleRate))
        set("synth.threadsafe-api", 0)
    }

    deinit { fluid.delete_fluid_settings(handle) }

    /// Sets an integer setting; returns false when FluidSynth does not know the key.
    @discardableResult
    func set(_ key: String, _ value: Int) -> Bool {
        fluid.fluid_settings_setint(handle, key, Int32(clamping: value)) == FLUID_OK
    }

    /// An integer setting's value (FluidSynth's default unless set); nil for an unknown key.
    func int(_ key: String) -> Int? {
        var value: Int32 = 0
        return fluid.fluid_settings_getint(handle, key, &value) == FLUID_OK ? Int(value) : nil
    }

    /// Sets a floating-point setting; returns false when FluidSynth does not know the key.
    @discardableResult
    func set(_ key: String, _ value: Double) -> Bool {
        fluid.fluid_settings_setnum(handle, key, value) == FLUID_OK
    }

    /// Sets a string setting; returns false when FluidSynth does not know the key.
    @discardableResult
    func set(_ key: String, _ value: String) -> Bool {
        fluid.fluid_settings_setstr(handle, key, value) == FLUID_OK
    }
}
