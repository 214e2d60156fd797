import MIDI
import Synchronization

/// One song being rendered, or the idle keep-alive signal: what an `AudioOutput` pulls audio from.
///
/// Outputs drive it from wherever suits them — a file writer's task, a paced null sink, or a
/// FluidSynth audio-driver thread — so all its state sits behind one `Mutex`. The render paths
/// never allocate; while paused they produce silence (real-time devices need data) without
/// advancing the song; once stopped or finished they produce nothing.
///
/// A song starts with `preRoll` of silence each time an output takes it up (see
/// `init(song:soundFont:preRoll:)`). The source holds its SoundFont's synthesiser (a lease) until
/// the song ends or it is stopped.
public final class PlaybackSource: Sendable {
    public let sampleRate: Int
    /// Frames of silence written before the song whenever a new output (stream) takes it up.
    let preRollFrames: Int

    private struct State {
        /// The song's sequencer; nil for the keep-alive signal.
        var scheduler: SongScheduler?
        /// The song as re-arranged by a live control, taken up at the start of the next render
        /// call (`replaceSong`): built off the audio thread, swapped in without allocating.
        var replacement: SongScheduler?
        /// The synthesiser the replacement plays on (`Synthesizer.fresh()`), made with it off the
        /// audio thread; nil if none could be made (the current one is then reset instead).
        var replacementSynthesizer: Synthesizer?
        /// The synthesiser a replacement took over from, kept until the next `replaceSong` (or the
        /// source's end) so that the audio thread never frees one.
        var retired: Synthesizer?
        /// The synthesiser the song ended on, kept (like `retired`) until the source goes.
        var finishedSynthesizer: Synthesizer?
        /// Frames rendered by the schedulers a live control replaced.
        var framesBefore = 0
        var keepAlive: KeepAliveSignal?
        /// What a device hears while the song is paused: the keep-alive signal with `keep_alive`
        /// (a long pause must not let the speaker power off), else nil: digital silence.
        var pauseSignal: KeepAliveSignal?
        var synthesizer: Synthesizer?
        /// Pre-roll frames still to write before the song goes on.
        var leadIn = 0
        var paused = false
        var stopped = false
        /// Set by the first render call: the output has begun taking audio.
        var started = false
        var pauseCount = 0
        /// Calls from a real-time device so far, paused or not: a device output's watchdog
        /// compares it over time to notice a driver thread that died.
        var devicePulls = 0
        var startWaiters: [CheckedContinuation<Void, Never>] = []
        /// Keyed, like `endWaiters`, so that a cancelled waiter can take its own back out.
        var resumeWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Keyed so that a cancelled waiter can take its own continuation back out.
        var endWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
        /// The device's latest word on how long until what it was last given is heard, in
        /// frames; nil until it says (a file or null output never does: nothing waits there).
        var deviceLatency: Int?
        /// What the link beyond the device adds, in frames (BlueALSA's PCM `Delay`: the codec
        /// and the Bluetooth transport), which the device's own word does not include; 0 until
        /// someone reports it.
        var linkDelay = 0
        /// How far behind the rendering the listener is: the device's latency and the link's
        /// delay; nil until the device has said (a file or null output never does).
        var latency: Int? { deviceLatency.map { $0 + linkDelay } }
        /// Song frames rendered that the device has not played yet: the device's latency while
        /// the song plays, draining as a paused song's device plays the pause's frames. A device
        /// that died keeps it: those frames were never heard.
        var unheard = 0
        /// The device's speaker is gone (`holdUnheard`): what the device pulls from now on
        /// reaches no one, so pulls no longer drain `unheard`. Until a new output or a resume.
        var unheardHeld = false
        /// Times the device ran out of audio while the song played (a gap heard).
        var underflows = 0
        var ended: Bool { stopped || (replacement == nil && scheduler?.isFinished == true) }
        /// Frames of the song rendered so far, over every replacement, the tail included.
        var position: Int { framesBefore + (scheduler?.position ?? 0) }
        /// Where the current scheduler is on its own timeline (the place in a live loop's pass).
        var timeline: Int { scheduler?.timelineFrame ?? 0 }

        /// Fills `frames` frames: what is left of the pre-roll, then the keep-alive signal or the
        /// song. `level(frame, value)` writes one sample to both channels; `song` renders the
        /// synthesiser as `SongScheduler.render`'s `write` does. Returns the frames produced
        /// (fewer than asked only at the song's end). Never allocates.
        mutating func render(
            frames: Int, level: (_ frame: Int, _ value: Float) -> Void,
            song: (_ synthesizer: Synthesizer, _ offset: Int, _ count: Int, _ measure: Bool) -> Float
        ) -> Int {
            let silent = min(leadIn, frames)
            for frame in 0..<silent { level(frame, 0) }
            leadIn -= silent
            if keepAlive != nil {
                for frame in silent..<frames { level(frame, keepAlive!.next()) }
                return frames
            }
            guard var current = synthesizer, silent < frames else { return silent }
            if var next = replacement {
                // A live control: whatever sounded stops, and the new timeline starts on a
                // synthesiser as fresh as one a render starting there would use (its first events,
                // the chase, set the state its position has), so what follows is that render, to
                // the sample. Without a fresh one, the current one is reset: the same notes, but its
                // effects keep a faint tail of what sounded.
                if let fresh = replacementSynthesizer {
                    retired = current
                    current = fresh
                    synthesizer = fresh
                    replacementSynthesizer = nil
                } else {
                    current.reset()
                    next.align(toBlockPhase: current.blockPhase)
                }
                framesBefore += scheduler?.position ?? 0
                scheduler = next
                replacement = nil
            }
            let produced = scheduler!.render(frames: frames - silent, synthesizer: current) { offset, count, measure in
                song(current, silent + offset, count, measure)
            }
            return silent + produced
        }
    }

    private let state: Mutex<State>
    /// The SoundFont whose synthesiser the song holds; nil for the keep-alive signal.
    private let soundFont: SoundFont?

    /// Takes the SoundFont's synthesiser (reset) for this song; throws `SoundFontError.inUse` if
    /// another song still holds it.
    ///
    /// - Parameters:
    ///   - preRoll: silence written before the first note whenever an output takes the song up:
    ///     at the start, and again when a new output (a re-opened stream) takes it over. A
    ///     Bluetooth speaker, and a sound server waking a suspended sink, clips the first moments
    ///     of a new stream; this makes those moments silence instead of the song's first note.
    ///   - keepAliveWhilePaused: a real-time device hears the keep-alive signal instead of digital
    ///     silence while the song is paused (`keep_alive`).
    ///   - sampleRate: the song's device's own rate, if it has one (`AudioOutput.deviceSampleRate`):
    ///     the song renders at it, so nothing on its way resamples it. Nil: the font's rate.
    public convenience init(song: MIDISong, soundFont: SoundFont, sampleRate: Int? = nil, preRoll: Duration = .zero,
                            keepAliveWhilePaused: Bool = false, keepAliveSound: KeepAliveSound = .bursts) throws(SoundFontError) {
        try self.init(arranged: ArrangedSong(song: song), soundFont: soundFont, sampleRate: sampleRate, preRoll: preRoll,
                      keepAliveWhilePaused: keepAliveWhilePaused, keepAliveSound: keepAliveSound)
    }

    /// A song laid out for live play, whose section loop (if any) repeats until replaced.
    public init(arranged song: ArrangedSong, soundFont: SoundFont, sampleRate: Int? = nil, preRoll: Duration = .zero,
                keepAliveWhilePaused: Bool = false, keepAliveSound: KeepAliveSound = .bursts) throws(SoundFontError) {
        let synthesizer = try soundFont.lease(sampleRate: sampleRate)
        let rate = synthesizer.sampleRate
        let scheduler = SongScheduler(song: song, sampleRate: rate, blockPhase: synthesizer.blockPhase)
        self.soundFont = soundFont
        self.sampleRate = rate
        self.preRollFrames = Self.frames(in: preRoll, sampleRate: rate)
        self.state = Mutex(State(scheduler: scheduler,
                                 pauseSignal: keepAliveWhilePaused ? KeepAliveSignal(sampleRate: rate, sound: keepAliveSound) : nil,
                                 synthesizer: synthesizer, leadIn: preRollFrames))
    }

    /// The keep-alive signal (`KeepAliveSignal`) for an idle speaker: it never ends by itself, only
    /// when stopped, and needs no SoundFont.
    public init(keepAliveAt sampleRate: Int, sound: KeepAliveSound = .bursts) {
        self.soundFont = nil
        self.sampleRate = sampleRate
        self.preRollFrames = 0
        self.state = Mutex(State(keepAlive: KeepAliveSignal(sampleRate: sampleRate, sound: sound)))
    }

    private static func frames(in duration: Duration, sampleRate: Int) -> Int {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return max(0, Int((seconds * Double(sampleRate)).rounded()))
    }

    deinit {
        let held = state.withLock { $0.synthesizer != nil }
        if held { soundFont?.releaseLease() }
    }

    // MARK: - Rendering

    /// Renders interleaved 16-bit stereo into `buffer` (its count must be even); returns the frames
    /// written: fewer than `buffer.count / 2` only at the song's end, 0 once ended or stopped.
    /// While paused it writes silence and returns the full count.
    public func render(into buffer: UnsafeMutableBufferPointer<Int16>) -> Int {
        if let produced = renderUnlessPaused(into: buffer) { return produced }
        buffer.update(repeating: 0)
        return buffer.count / 2
    }

    /// Like `render(into:)`, but returns nil and writes nothing while paused: outputs that pace
    /// themselves then wait for the resume instead of recording silence.
    func renderUnlessPaused(into buffer: UnsafeMutableBufferPointer<Int16>) -> Int? {
        let frames = buffer.count / 2
        let (produced, ended, firstCall) = state.withLock { state -> (Int?, Bool, Bool) in
            let firstCall = !state.started
            state.started = true
            guard !state.ended else { return (0, false, firstCall) }
            if state.paused { return (nil, false, firstCall) }
            let produced = state.render(frames: frames) { frame, value in
                let sample = Int16((value * Float(Int16.max)).rounded())
                buffer[frame * 2] = sample
                buffer[frame * 2 + 1] = sample
            } song: { synthesizer, offset, count, measure in
                synthesizer.renderInterleavedS16(buffer, offset: offset, frames: count)
                guard measure else { return 0 }
                var peak: Int16 = 0
                for index in (offset * 2)..<((offset + count) * 2) {
                    let sample = buffer[index]
                    peak = max(peak, sample == .min ? .max : abs(sample))
                }
                return Float(peak) / Float(Int16.max)
            }
            return (produced, state.ended, firstCall)
        }
        if firstCall { announceStart() }
        if ended { finishIfEnded() }
        return produced
    }

    /// Renders planar float stereo for a real-time device: always fills `frames` frames (silence,
    /// or the keep-alive signal while paused, once stopped or after the end). Returns the frames
    /// that carried the song.
    func renderForDevice(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let (produced, filled, endedNow, firstCall) = state.withLock { state -> (Int, Int, Bool, Bool) in
            let firstCall = !state.started
            state.started = true
            state.devicePulls &+= 1
            guard !state.ended else { return (0, 0, false, firstCall) }
            if state.paused {
                // The pause's frames push the song's last ones out of the device's buffer, to the
                // listener; once the speaker is gone they push them nowhere.
                if !state.unheardHeld { state.unheard = max(0, state.unheard - frames) }
                guard state.pauseSignal != nil else { return (0, 0, false, firstCall) }
                for frame in 0..<frames {
                    let value = state.pauseSignal!.next()
                    left[frame] = value
                    right[frame] = value
                }
                return (0, frames, false, firstCall)
            }
            let produced = state.render(frames: frames) { frame, value in
                left[frame] = value
                right[frame] = value
            } song: { synthesizer, offset, count, measure in
                synthesizer.renderPlanarFloat(left: left, right: right, offset: offset, frames: count)
                guard measure else { return 0 }
                var peak: Float = 0
                for index in offset..<(offset + count) {
                    peak = max(peak, abs(left[index]), abs(right[index]))
                }
                return peak
            }
            if let latency = state.latency { state.unheard = min(latency, state.timeline) }
            return (produced, produced, state.ended, firstCall)
        }
        if filled < frames {
            (left + filled).update(repeating: 0, count: frames - filled)
            (right + filled).update(repeating: 0, count: frames - filled)
        }
        // Waking the start and end waiters happens once per song, not per buffer.
        if firstCall { announceStart() }
        if endedNow { finishIfEnded() }
        return produced
    }

    // MARK: - Control

    /// The song's length as scheduled (its tempo-map duration, to the frame, never before its last
    /// event), tail excluded; after a live control, the length of the timeline that replaced it.
    public var durationSeconds: Double {
        let frames = state.withLock { ($0.replacement ?? $0.scheduler)?.endFrame ?? 0 }
        return Double(frames) / Double(sampleRate)
    }

    /// Where the song is on its timeline, as seconds, capped at its duration (the tail is not
    /// music): since the start, or since the last live control, within a live loop's pass.
    public var positionSeconds: Double {
        state.withLock { state in
            // A control not yet taken up: its timeline starts at 0.
            guard state.replacement == nil, let scheduler = state.scheduler else { return 0 }
            return scheduler.timelineSeconds(atFrame: state.timeline)
        }
    }

    /// Where the listener is on the timeline, as seconds: `positionSeconds` less what the device
    /// holds but has not played yet (its latency). The same as `positionSeconds` for a file or
    /// null output, and once a paused song's device has played out what it held. Live controls
    /// act at `positionSeconds` (where rendering goes on); the status shows this.
    public var heardPositionSeconds: Double {
        state.withLock { state in
            guard state.replacement == nil, let scheduler = state.scheduler else { return 0 }
            return scheduler.timelineSeconds(atFrame: max(0, state.timeline - state.unheard))
        }
    }

    /// Seconds of the song rendered but not heard: while it plays, the device's latency; after
    /// its device died, what that device never played (a resumed song goes back by it).
    public var unheardSeconds: Double { Double(state.withLock { $0.unheard }) / Double(sampleRate) }

    /// The output's latency: the device's as it last reported it, and the link's delay beyond
    /// it (``reportLinkDelay(_:)``); nil for an output with none (a file, null) or before the
    /// device said.
    public var outputLatencySeconds: Double? {
        state.withLock { $0.latency }.map { Double($0) / Double(sampleRate) }
    }

    /// The device's word on how long until the audio it was last given is heard: its buffer and
    /// the sink's (a sound server's stream latency, a driver's configured buffer).
    func reportDeviceLatency(frames: Int) {
        state.withLock { state in
            state.deviceLatency = max(0, frames)
            if !state.paused, let latency = state.latency { state.unheard = min(latency, state.timeline) }
        }
    }

    /// What the link beyond the device adds before the listener hears a sample: BlueALSA's PCM
    /// `Delay` (the codec and the Bluetooth transport), which FluidSynth's ALSA driver cannot
    /// ask for. Counted in the heard position and the latency once the device has reported its
    /// own; nil when it is no longer known (counted as none). A new output starts with none.
    package func reportLinkDelay(_ delay: Duration?) {
        let frames = delay.map { max(0, Int((($0 / .seconds(1)) * Double(sampleRate)).rounded())) } ?? 0
        state.withLock { state in
            state.linkDelay = frames
            if !state.paused, let latency = state.latency { state.unheard = min(latency, state.timeline) }
        }
    }

    /// The device found nothing to play when it needed audio (a sound server's underflow): the
    /// listener heard a gap. Counted so that the song's end can say so (`outputUnderflows`).
    ///
    /// `atStreamFrame` is where the audio ran out, counted from the start of the device's stream,
    /// when the device knows. Within the pre-roll the listener heard no gap in the song, only its
    /// silence a little longer: a sound server waking a Bluetooth sink can run a new stream dry
    /// there (seen with PipeWire on real BlueZ), and that is not counted.
    func noteOutputUnderflow(atStreamFrame frame: Int? = nil) {
        if let frame, frame <= preRollFrames { return }
        state.withLock { $0.underflows += 1 }
    }

    /// How many gaps the song's devices reported (a sound server's underflows), over every output.
    public var outputUnderflows: Int { state.withLock { $0.underflows } }

    func reportDeviceLatency(microseconds: Int) {
        reportDeviceLatency(frames: Int((Double(microseconds) * Double(sampleRate) / 1_000_000).rounded()))
    }

    /// Plays `song` from its start instead of the current timeline, from the next render call on
    /// (a live control: seek, loop, tempo, transpose, mute, solo). Nothing that sounded goes on;
    /// the new timeline's chase sets the state at its start. Fails once the song has ended.
    @discardableResult
    public func replaceSong(with song: ArrangedSong) -> Bool {
        let scheduler = SongScheduler(song: song, sampleRate: sampleRate)
        let synthesizer = state.withLock { $0.synthesizer }?.fresh()
        // What the lock gives back (a synthesiser retired by the last control, a replacement's not
        // taken up yet) is freed here, on the caller's thread, after the lock.
        let (accepted, dropped) = state.withLock { state -> (Bool, [Synthesizer?]) in
            guard !state.ended, state.scheduler != nil else { return (false, [synthesizer]) }
            synthesizer?.takeUpFont()
            defer {
                state.replacement = scheduler
                state.replacementSynthesizer = synthesizer
                state.retired = nil
            }
            return (true, [state.retired, state.replacementSynthesizer])
        }
        withExtendedLifetime(dropped) {}
        return accepted
    }

    /// How many times a real-time device has asked for audio (silence while paused included).
    var devicePulls: Int { state.withLock { $0.devicePulls } }

    /// Frames rendered so far, the release tail included.
    public var renderedFrames: Int { state.withLock { $0.position } }

    public var isPaused: Bool { state.withLock { $0.paused } }
    /// True once the song and its tail are rendered, or the source was stopped.
    public var hasEnded: Bool { state.withLock { $0.ended } }

    /// Pauses; a caller waiting for a resume to be taken up (`waitUntilStarted()`) is released:
    /// a pause that overtakes a resume ends that wait, or the resume would never answer.
    func pause() {
        let waiters = state.withLock { state in
            state.paused = true
            state.pauseCount += 1
            defer { state.startWaiters = [] }
            return state.startWaiters
        }
        waiters.forEach { $0.resume() }
    }

    /// The device's speaker is gone: what the device held is never heard, however long it goes on
    /// asking for audio. A sound server's graph can go on pulling a stream after its Bluetooth sink
    /// lost the speaker (PipeWire's sink lived on for about a second after bluetoothd died, until
    /// it released the transport), and counting those pulls as played out would make a resumed
    /// song skip what the speaker never played (`unheardSeconds` falls to 0). Ends with a new
    /// output or a resume.
    func holdUnheard() {
        state.withLock { $0.unheardHeld = true }
    }

    /// How many times the song was paused: a paced output that slept through a whole pause (it
    /// never saw `isPaused`) learns from a changed count that it must not catch up on that time.
    var pauseCount: Int { state.withLock { $0.pauseCount } }

    /// Makes `waitUntilStarted()` wait for the next render call again, and the pre-roll play
    /// again: used when a new output (a new stream, which a speaker clips again) takes the song
    /// over, so the engine knows when it has.
    func expectNewOutput() {
        let preRoll = preRollFrames
        state.withLock { state in
            state.started = false
            state.leadIn = preRoll
            // The old device's buffer went with it; the new one reports its own latency.
            state.deviceLatency = nil
            state.linkDelay = 0
            state.unheard = 0
            state.unheardHeld = false
        }
    }

    /// Resumes; `waitUntilStarted()` then waits for the output's next render, so a caller knows
    /// the output has taken up the song again.
    func resume() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.paused = false
            state.started = false
            state.unheardHeld = false
            defer { state.resumeWaiters = [:] }
            return Array(state.resumeWaiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Ends the song where it is: outputs see no more audio, and waiters are released.
    public func stop() {
        state.withLock { $0.stopped = true }
        finishIfEnded()
    }

    /// Returns when the source is no longer paused (or has ended), or the calling task is
    /// cancelled. Used by outputs that pace themselves, so a paused song costs nothing instead of
    /// a loop writing silence; cancellation matters when a paused song's output is replaced (the
    /// old output's render task is cancelled and awaited: it must not wait for a resume).
    public func waitWhilePaused() async {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = state.withLock { state -> Bool in
                    guard state.paused, !state.ended, !Task.isCancelled else { return false }
                    state.resumeWaiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.resumeWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Returns once an output has asked for the first block of audio since the start or the last
    /// resume (or the source has ended, or was paused again): the moment a request becomes sound.
    public func waitUntilStarted() async {
        await withCheckedContinuation { continuation in
            let waiting = state.withLock { state -> Bool in
                guard !state.started, !state.ended, !state.paused else { return false }
                state.startWaiters.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }

    private func announceStart() {
        let waiters = state.withLock { state in
            defer { state.startWaiters = [] }
            return state.startWaiters
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once the song (tail included) has been rendered, or the source was stopped, or the
    /// calling task is cancelled (the source itself goes on: an output being replaced mid-song
    /// leaves the song to the next output).
    public func waitUntilEnded() async {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = state.withLock { state -> Bool in
                    guard !state.ended, !Task.isCancelled else { return false }
                    state.endWaiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.endWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Once ended: gives the synthesiser back and wakes everyone waiting.
    private func finishIfEnded() {
        let (release, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            guard state.ended else { return (false, []) }
            let release = state.synthesizer != nil
            if release {
                state.synthesizer?.releaseAllNotes()
                // One made fresh for a live control is freed with the source, not here: this may
                // be the audio thread.
                state.finishedSynthesizer = state.synthesizer
                state.synthesizer = nil
            }
            defer { state.endWaiters = [:]; state.resumeWaiters = [:]; state.startWaiters = [] }
            return (release, Array(state.endWaiters.values) + Array(state.resumeWaiters.values) + state.startWaiters)
        }
        if release { soundFont?.releaseLease() }
        waiters.forEach { $0.resume() }
    }
}
