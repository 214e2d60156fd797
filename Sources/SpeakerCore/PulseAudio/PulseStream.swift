internal import CPulse
import AsyncSignals
import Synchronization

/// One playback stream to a named sink that the sound server may never move elsewhere: float32
/// stereo, pulled from its owner's render closure by libpulse's write callback.
///
/// Why a stream of our own: a server moves an ordinary stream whose sink vanished to its default
/// sink (the box's own output) and plays there whatever the stream still carries.
/// `PA_STREAM_DONT_MOVE` makes it end the stream instead, which FluidSynth's pulseaudio driver
/// (pa_simple) cannot ask for. The end is reported (`waitUntilEnded()`, `end`) with the server's
/// reason; a stream whose sink went away is *killed* (`PulseStreamEnd.killed`).
///
/// Each stream has its own connection and libpulse threaded main loop, whose thread runs every
/// callback, so no Swift concurrency thread ever waits on the server: `open` awaits a signal,
/// and `close()` hands the teardown (which joins the main loop's thread) to a thread of its own.
///
/// Thread safety: `stream`, `left` and `right` are touched only on the main loop's thread (and by
/// the teardown, under the main loop's lock). The render closure sits behind a mutex that the
/// write callback holds while rendering, so once `close()` returns the owner's closure is never
/// called again. The stream keeps itself alive (one retain) from `open` until its teardown.
public final class PulseStream: @unchecked Sendable {
    /// Fills `frames` frames of planar audio (left and right, -1...1) for the sink.
    public typealias Render = @Sendable (_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, _ frames: Int) -> Void
    /// Told, after each write, how long until the last frame written is heard: the stream's
    /// buffer plus the sink's own latency (for a Bluetooth sink, the transport's, with the
    /// speaker's delay report where the server has one), in microseconds.
    public typealias LatencyReport = @Sendable (_ microseconds: Int) -> Void
    /// Told each time the server found the stream empty when the sink needed audio (libpulse's
    /// underflow): a gap the listener hears, which nothing else would report. `atFrame` is where
    /// in the stream the audio ran out (frames written since it opened), when the server says.
    public typealias UnderflowReport = @Sendable (_ atFrame: Int?) -> Void

    /// The sink the stream plays to, by name.
    public let sink: String
    private let connection: PulseConnection
    private var pulse: PulseLibrary.API { connection.pulse }
    private var context: OpaquePointer { connection.context }
    private var stream: OpaquePointer?
    private let sampleRate: Int
    /// Frames per render call: the owner is asked for at most this many at a time.
    private let period: Int
    /// The buffer asked of the server (`tlength`): the stream's target latency, the owner's
    /// periods at first, doubled at each underflow up to `maxBufferFrames`. Main loop only.
    private var askedBufferFrames: Int
    /// The most the buffer may grow to after underflows (the first ask: it never grows).
    private let maxBufferFrames: Int
    /// What the server keeps queued (`tlength`, as it granted), in frames; 0 until it has said.
    private let grantedBufferFrames = Atomic(0)
    private let name: String
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    /// nil once closed.
    private let render: Mutex<Render?>
    private let latencyReport: LatencyReport?
    private let underflowReport: UnderflowReport?
    private let closing = Mutex(false)
    private let opened = OneShotSignal<Void, PulseStreamError>()
    private let ended = OneShotSignal<PulseStreamEnd, Never>()

    /// Bytes of one float32 stereo frame.
    private static let frameBytes = 2 * MemoryLayout<Float>.size

    /// Connects a stream to `sink` on `server` and returns once the server has taken it (it asks
    /// for audio from then on), or throws the server's reason (no server, no such sink).
    ///
    /// - Parameters:
    ///   - server: a PulseAudio server string; nil lets libpulse find the server as every client
    ///     does. Never autospawned: a daemon must not start a sound server of its own.
    ///   - period: frames per request from the server (and per render call).
    ///   - periods: the buffer the server keeps filled, in periods: the stream's target latency.
    ///   - maxPeriods: what that buffer may grow to, in periods: each underflow (a gap the
    ///     listener heard) doubles it up to this. Nil: it never grows.
    ///   - timeout: how long a server that does not answer may take before the open fails.
    public static func open(
        server: String?, sink: String, sampleRate: Int, period: Int, periods: Int, maxPeriods: Int? = nil, name: String,
        timeout: Duration = .seconds(10), latency: LatencyReport? = nil, underflow: UnderflowReport? = nil,
        render: @escaping Render
    ) async throws(PulseStreamError) -> PulseStream {
        let connection: PulseConnection
        switch PulseConnection.make(name: "speakerd") {
        case .success(let made): connection = made
        case .failure(let error): throw PulseStreamError(sink: sink, reason: error.reason)
        }
        let stream = PulseStream(connection: connection, sink: sink, sampleRate: sampleRate,
                                 period: period, bufferFrames: period * periods, maxBufferFrames: period * max(periods, maxPeriods ?? periods),
                                 name: name, latency: latency, underflow: underflow, render: render)
        stream.start(server: server)
        let outcome: Result<Void, PulseStreamError>
        do { outcome = try await stream.opened.result(timeout: timeout) } catch {
            // Cancelled, or a server that takes a connection but never answers.
            outcome = .failure(PulseStreamError(sink: sink, reason: error.description))
        }
        guard case let .failure(error) = outcome else { return stream }
        stream.close()
        throw error
    }

    private init(connection: PulseConnection, sink: String, sampleRate: Int,
                 period: Int, bufferFrames: Int, maxBufferFrames: Int, name: String, latency: LatencyReport?,
                 underflow: UnderflowReport?, render: @escaping Render) {
        (self.connection, self.sink) = (connection, sink)
        (latencyReport, underflowReport) = (latency, underflow)
        (self.sampleRate, self.period, self.name) = (sampleRate, period, name)
        (self.maxBufferFrames, askedBufferFrames) = (maxBufferFrames, bufferFrames)
        left = .allocate(capacity: period)
        right = .allocate(capacity: period)
        self.render = Mutex(render)
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    /// The frames the server keeps queued for the stream (its `tlength`, as the server granted
    /// it): the stream's target latency, which grows after underflows when `open` allowed it;
    /// 0 until the server has said.
    public var serverBufferFrames: Int { grantedBufferFrames.load(ordering: .relaxed) }

    /// How the stream ended, once it has (the server ended it, or its owner closed it).
    public var end: PulseStreamEnd? {
        if case let .success(end)? = ended.result { return end }
        return nil
    }

    /// Returns once the stream has ended: killed by the server (its sink went away), failed (the
    /// connection was lost), or closed by its owner; nil if the waiting task was cancelled first.
    public func waitUntilEnded() async -> PulseStreamEnd? {
        guard case let .success(end)? = try? await ended.result() else { return nil }
        return end
    }

    /// Stops rendering at once (the render closure is never called after this returns), then
    /// ends the stream and its connection on a thread of its own. Safe to call more than once.
    public func close() {
        render.withLock { $0 = nil }
        let first = closing.withLock { closing in
            defer { closing = true }
            return !closing
        }
        guard first else { return }
        DetachedThread.start(name: "pulse-stream") { [self] in teardown() }
    }

    // MARK: - Connecting

    private func start(server: String?) {
        _ = Unmanaged.passRetained(self) // Released by the teardown.
        // Unowned, as the stream's other callbacks are: the stream lives until its teardown, which
        // clears this callback first. A weak reference would give the stream a side table that
        // LeakSanitizer cannot trace to it while a teardown is still under way at exit.
        if let problem = connection.connect(server: server, stateChanged: { [unowned self] state in contextChanged(state) }) {
            finish(reason: problem, killed: false)
        }
    }

    /// Disconnects (no callback runs during or after it), ends the main loop, joining its thread,
    /// and drops the stream's own retain.
    private func teardown() {
        connection.teardown { [self] _ in
            guard let stream else { return }
            pulse.pa_stream_set_state_callback(stream, nil, nil)
            pulse.pa_stream_set_write_callback(stream, nil, nil)
            pulse.pa_stream_set_underflow_callback(stream, nil, nil)
            _ = pulse.pa_stream_disconnect(stream)
            pulse.pa_stream_unref(stream)
            self.stream = nil
        }
        opened.fail(PulseStreamError(sink: sink, reason: "the stream was closed before it played"))
        ended.succeed(.closed)
        Unmanaged.passUnretained(self).release()
    }

    // MARK: - On the main loop's thread

    private func contextChanged(_ state: pa_context_state_t) {
        switch state {
        case PA_CONTEXT_READY: connectStream()
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED: finish(killed: false)
        default: break
        }
    }

    private func connectStream() {
        #if _endian(little)
        let format = PA_SAMPLE_FLOAT32LE
        #else
        let format = PA_SAMPLE_FLOAT32BE
        #endif
        var spec = pa_sample_spec(format: format, rate: UInt32(sampleRate), channels: 2)
        guard let properties = pulse.pa_proplist_new() else {
            finish(reason: "libpulse could not create a property list (out of memory?)", killed: false)
            return
        }
        _ = pulse.pa_proplist_sets(properties, "media.role", "music")
        _ = pulse.pa_proplist_sets(properties, "application.name", "speakerd")
        let created = pulse.pa_stream_new_with_proplist(context, name, &spec, nil, properties)
        pulse.pa_proplist_free(properties)
        guard let stream = created else {
            finish(killed: false)
            return
        }
        self.stream = stream
        let me = Unmanaged.passUnretained(self).toOpaque()
        pulse.pa_stream_set_state_callback(stream, { stream, me in
            guard let stream, let me else { return }
            Unmanaged<PulseStream>.fromOpaque(me).takeUnretainedValue().streamChanged(stream)
        }, me)
        pulse.pa_stream_set_write_callback(stream, { stream, bytes, me in
            guard let stream, let me else { return }
            Unmanaged<PulseStream>.fromOpaque(me).takeUnretainedValue().write(to: stream, bytes: bytes)
        }, me)
        pulse.pa_stream_set_underflow_callback(stream, { stream, me in
            guard let stream, let me else { return }
            let owner = Unmanaged<PulseStream>.fromOpaque(me).takeUnretainedValue()
            // A byte index into what was written; -1 when the server does not say.
            let index = owner.pulse.pa_stream_get_underflow_index(stream)
            owner.underflowReport?(index >= 0 ? Int(index) / PulseStream.frameBytes : nil)
            owner.growBuffer(of: stream)
        }, me)
        // The server keeps `askedBufferFrames` queued (the owner's periods: speakerd's DeviceOutput asks
        // for about 186 ms, which a sound server's own scheduling and a Bluetooth sink that came
        // back need) and asks for a period at a time; the buffer grows after underflows (growBuffer).
        var buffer = bufferAttributes(frames: askedBufferFrames)
        // DONT_MOVE: when the sink goes away the server ends the stream instead of moving it to
        // its default sink. ADJUST_LATENCY: the sink's own latency is set to honour `tlength`.
        // INTERPOLATE_TIMING and AUTO_TIMING_UPDATE: libpulse keeps the timing current, so the
        // latency after each write is what the listener is behind by (the heard position).
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_DONT_MOVE.rawValue | PA_STREAM_ADJUST_LATENCY.rawValue
            | PA_STREAM_INTERPOLATE_TIMING.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue)
        guard pulse.pa_stream_connect_playback(stream, sink, &buffer, flags, nil, nil) >= 0 else {
            finish(killed: false)
            return
        }
    }

    /// Asks the server to keep `frames` queued, a period at a time.
    private func bufferAttributes(frames: Int) -> pa_buffer_attr {
        let unset = UInt32.max
        return pa_buffer_attr(maxlength: unset, tlength: UInt32(frames * Self.frameBytes), prebuf: unset,
                              minreq: UInt32(period * Self.frameBytes), fragsize: unset)
    }

    /// After an underflow: the buffer doubles, up to `maxBufferFrames`. Why: a machine busy
    /// enough to starve the stream once (a burst of other work, a slow SD card, a sink that
    /// changed its latency mid-song) tends to again, and each time the listener hears a gap; a
    /// sound server's own sinks raise their wake-up margin after an underrun the same way. The
    /// cost is latency, which the stream's timing reports (so the heard position and `status`
    /// follow), and it lasts only as long as the stream (the song).
    private func growBuffer(of stream: OpaquePointer) {
        guard askedBufferFrames < maxBufferFrames else { return }
        askedBufferFrames = min(maxBufferFrames, askedBufferFrames * 2)
        var buffer = bufferAttributes(frames: askedBufferFrames)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_stream_set_buffer_attr(stream, &buffer, { stream, success, me in
            guard let stream, let me, success != 0 else { return }
            Unmanaged<PulseStream>.fromOpaque(me).takeUnretainedValue().noteGrantedBuffer(of: stream)
        }, me)
        if let operation { pulse.pa_operation_unref(operation) }
    }

    /// What the server granted, from its answer (the stream's buffer attributes).
    private func noteGrantedBuffer(of stream: OpaquePointer) {
        guard let granted = pulse.pa_stream_get_buffer_attr(stream) else { return }
        grantedBufferFrames.store(Int(granted.pointee.tlength) / Self.frameBytes, ordering: .relaxed)
    }

    private func streamChanged(_ stream: OpaquePointer) {
        switch pulse.pa_stream_get_state(stream) {
        case PA_STREAM_READY:
            noteGrantedBuffer(of: stream)
            opened.succeed(())
        case PA_STREAM_FAILED, PA_STREAM_TERMINATED:
            // libpulse reports the server's "stream killed" command as a failure with PA_ERR_KILLED.
            finish(killed: pulse.pa_context_errno(context) == Int32(PA_ERR_KILLED.rawValue))
        default: break
        }
    }

    /// Fills what the server asks for, a period at a time, straight into libpulse's buffers.
    private func write(to stream: OpaquePointer, bytes: Int) {
        var remaining = bytes
        while remaining >= Self.frameBytes {
            var data: UnsafeMutableRawPointer?
            var size = remaining
            guard pulse.pa_stream_begin_write(stream, &data, &size) >= 0, let data, size >= Self.frameBytes else { return }
            let frames = min(size / Self.frameBytes, period)
            render.withLock { render in
                if let render {
                    render(left, right, frames)
                } else {
                    left.update(repeating: 0, count: frames)
                    right.update(repeating: 0, count: frames)
                }
            }
            let samples = data.bindMemory(to: Float.self, capacity: frames * 2)
            for frame in 0..<frames {
                samples[frame * 2] = left[frame]
                samples[frame * 2 + 1] = right[frame]
            }
            guard pulse.pa_stream_write(stream, data, frames * Self.frameBytes, nil, 0, PA_SEEK_RELATIVE) >= 0 else { return }
            remaining -= frames * Self.frameBytes
        }
        reportLatency(of: stream)
    }

    /// Tells the owner the stream's latency, once libpulse has timing for it (it answers
    /// "no data" until the server's first timing update; a negative latency counts as none).
    private func reportLatency(of stream: OpaquePointer) {
        guard let latencyReport else { return }
        var microseconds: pa_usec_t = 0
        var negative: Int32 = 0
        guard pulse.pa_stream_get_latency(stream, &microseconds, &negative) == 0 else { return }
        latencyReport(negative != 0 ? 0 : Int(clamping: microseconds))
    }

    /// The connection or the stream ended: a failure to open, or the end of a playing stream.
    private func finish(reason: String? = nil, killed: Bool) {
        let reason = reason ?? pulse.pa_strerror(pulse.pa_context_errno(context)).map { String(cString: $0) } ?? "unknown error"
        if opened.fail(PulseStreamError(sink: sink, reason: reason)) { return }
        ended.succeed(killed ? .killed(sink: sink, reason: reason) : .failed(sink: sink, reason: reason))
    }
}

/// How a ``PulseStream`` ended.
public enum PulseStreamEnd: Sendable, Equatable {
    /// The server ended the stream rather than move it: its sink went away (or someone killed
    /// it, `pactl kill-sink-input`). `reason` is libpulse's sentence ("Entity killed").
    case killed(sink: String, reason: String)
    /// The connection failed or the server ended it otherwise (the server stopped).
    case failed(sink: String, reason: String)
    /// Its owner closed it.
    case closed
}

extension PulseStreamEnd: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .killed(sink, reason):
            "the sound server ended the stream instead of moving it off sink \(sink), which went away (\(reason.lowercased()))"
        case let .failed(sink, reason): "the stream to sink \(sink) failed: \(reason.lowercased())"
        case .closed: "the stream was closed"
        }
    }
}

/// A ``PulseStream`` could not be opened.
public struct PulseStreamError: Error, Equatable, CustomStringConvertible {
    public let sink: String
    /// libpulse's sentence ("No such entity" for a sink that does not exist), or ours.
    public let reason: String

    public var description: String { "could not open a stream to sink \(sink): \(reason.lowercased())" }
}
