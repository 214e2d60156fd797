import AsyncSignals
import MIDI
internal import CFluidSynth

/// Owns one `fluid_synth_t`: the voice engine that turns MIDI messages into samples.
///
/// It is not thread-safe on purpose (see `SynthSettings`): one `PlaybackSource` at a time uses it,
/// under that source's `Mutex`, and `SoundFont` hands it out through a lease so two songs never
/// share it. That contract is why it may be marked `@unchecked Sendable`.
final class Synthesizer: @unchecked Sendable {
    let handle: OpaquePointer
    let fluid: FluidSynthLibrary.API
    /// Kept alive because FluidSynth reads some settings after creation.
    private let settings: SynthSettings
    let sampleRate: Int
    /// The synthesiser that loaded the SoundFont this one plays, for a synthesiser made by
    /// `fresh()`: it owns the font (FluidSynth deletes a synthesiser's fonts with it), so it is
    /// kept alive for as long as this one borrows the font.
    private let fontOwner: Synthesizer?
    /// The SoundFont loaded by `loadSoundFont`, or, once `takeUpFont()` added it here, the one
    /// borrowed from `fontOwner`.
    private var font: OpaquePointer?
    /// Frames rendered since FluidSynth's last block boundary (`SongScheduler.blockFrames`): where
    /// on its grid the next event would wait, for a song taking up a synthesiser that played before.
    private(set) var blockPhase = 0

    init(sampleRate: Int) throws(SoundFontError) {
        let settings = try SynthSettings(sampleRate: sampleRate)
        guard let handle = settings.fluid.new_fluid_synth(settings.handle) else { throw .outOfMemory("FluidSynth synthesiser") }
        self.fluid = settings.fluid
        self.settings = settings
        self.handle = handle
        self.sampleRate = sampleRate
        self.fontOwner = nil
    }

    /// A synthesiser with `settings` (its sample rate among them) that plays `owner`'s font.
    private init(borrowingFontOf owner: Synthesizer, settings: SynthSettings, sampleRate: Int) throws(SoundFontError) {
        guard let handle = owner.fluid.new_fluid_synth(settings.handle) else { throw .outOfMemory("FluidSynth synthesiser") }
        self.fluid = owner.fluid
        self.settings = settings
        self.handle = handle
        self.sampleRate = sampleRate
        self.fontOwner = owner
    }

    deinit {
        // A borrowed font is handed back first, or FluidSynth would delete it with this synthesiser.
        if fontOwner != nil, let font { _ = fluid.fluid_synth_remove_sfont(handle, font) }
        fluid.delete_fluid_synth(handle)
    }

    /// Loads a SoundFont file and makes its presets the active ones; returns FluidSynth's font id.
    /// Slow (tens of milliseconds for a small GM font): call it off latency-sensitive threads.
    func loadSoundFont(path: String) -> Int32? {
        let id = fluid.fluid_synth_sfload(handle, path, 1)
        guard id != FLUID_FAILED else { return nil }
        font = fluid.fluid_synth_get_sfont_by_id(handle, id)
        return id
    }

    /// A new synthesiser for the same SoundFont, to be in the state a freshly loaded one has, which
    /// `reset()` cannot restore: empty reverb and chorus with their modulators at their start,
    /// FluidSynth's 64-frame block starting on its first frame, its dither sequence at its start.
    /// A live control (a seek) plays its new timeline on one, so that what follows it is, to the
    /// sample, what a render starting there gives.
    ///
    /// Cheap (about half a millisecond, no file read: the font is shared, not loaded again), but it
    /// allocates: call it off the audio thread. It plays nothing until `takeUpFont()`. Nil when
    /// this synthesiser has no font, or there is no memory.
    ///
    /// With a `sampleRate` other than this one's, the new synthesiser renders at that rate (the
    /// font's samples are the same at any rate: FluidSynth pitches them for its output rate), so
    /// a song can be rendered at its device's own rate from the one font loaded at start-up.
    func fresh(sampleRate rate: Int? = nil) -> Synthesizer? {
        let owner = fontOwner ?? self
        guard owner.font != nil else { return nil }
        let rate = rate ?? sampleRate
        guard let settings = rate == sampleRate ? settings : try? SynthSettings(sampleRate: rate) else { return nil }
        return try? Synthesizer(borrowingFontOf: owner, settings: settings, sampleRate: rate)
    }

    /// Makes a synthesiser from `fresh()` play the font, from its power-on state. FluidSynth gives
    /// the font this synthesiser's id for it (the same number it has everywhere, but a write all
    /// the same), so call it while no synthesiser playing that font renders: under the lock of the
    /// one song that holds it. Microseconds, and no allocation beyond one list node.
    func takeUpFont() {
        guard font == nil, let borrowed = fontOwner?.font else { return }
        // Fails only for a null argument; neither is.
        _ = fluid.fluid_synth_add_sfont(handle, borrowed)
        font = borrowed
        reset()
    }

    /// Silences every voice and returns every channel to its power-on state (programs, controllers,
    /// pitch bend, tuning), so one song's settings never leak into the next.
    /// (FluidSynth's return codes here only report a channel out of range; -1 means all of them.)
    func reset() {
        _ = fluid.fluid_synth_all_notes_off(handle, -1)
        _ = fluid.fluid_synth_all_sounds_off(handle, -1)
        _ = fluid.fluid_synth_system_reset(handle)
    }

    /// Releases every held note on every channel (they fade with their release envelope).
    func releaseAllNotes() {
        _ = fluid.fluid_synth_all_notes_off(handle, -1)
    }

    /// Sends one message. FluidSynth's return codes only report out-of-range values, which our MIDI
    /// reader already excludes, or unsupported SysEx, which a synthesiser is free to ignore.
    func send(_ message: MIDIMessage) {
        switch message {
        case let .noteOn(channel, key, velocity):
            // A note-on with velocity 0 is a note-off (MIDI 1.0); FluidSynth handles that itself.
            _ = fluid.fluid_synth_noteon(handle, Int32(channel), Int32(key), Int32(velocity))
        case let .noteOff(channel, key, _):
            _ = fluid.fluid_synth_noteoff(handle, Int32(channel), Int32(key))
        case let .polyPressure(channel, key, pressure):
            _ = fluid.fluid_synth_key_pressure(handle, Int32(channel), Int32(key), Int32(pressure))
        case let .controlChange(channel, controller, value):
            _ = fluid.fluid_synth_cc(handle, Int32(channel), Int32(controller), Int32(value))
        case let .programChange(channel, program):
            _ = fluid.fluid_synth_program_change(handle, Int32(channel), Int32(program))
        case let .channelPressure(channel, pressure):
            _ = fluid.fluid_synth_channel_pressure(handle, Int32(channel), Int32(pressure))
        case let .pitchBend(channel, value):
            _ = fluid.fluid_synth_pitch_bend(handle, Int32(channel), Int32(value))
        case let .systemExclusive(bytes):
            guard !bytes.isEmpty else { return }
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    _ = fluid.fluid_synth_sysex(handle, chars.baseAddress, Int32(chars.count), nil, nil, nil, 0)
                }
            }
        }
    }

    /// Renders `frames` frames of 16-bit stereo into an interleaved buffer starting at frame `offset`.
    /// (FluidSynth fails these writes only for arguments out of range, which the callers' buffer
    /// arithmetic rules out, so the return codes are not looked at.)
    func renderInterleavedS16(_ buffer: UnsafeMutableBufferPointer<Int16>, offset: Int, frames: Int) {
        let base = UnsafeMutableRawPointer(buffer.baseAddress!)
        _ = fluid.fluid_synth_write_s16(handle, Int32(frames), base, Int32(offset * 2), 2, base, Int32(offset * 2 + 1), 2)
        blockPhase = (blockPhase + frames) % SongScheduler.blockFrames
    }

    /// Renders `frames` frames of float stereo into two planar buffers starting at frame `offset`.
    func renderPlanarFloat(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, offset: Int, frames: Int) {
        _ = fluid.fluid_synth_write_float(handle, Int32(frames), left, Int32(offset), 1, right, Int32(offset), 1)
        blockPhase = (blockPhase + frames) % SongScheduler.blockFrames
    }
}
