import CPulse

/// The volume of the speaker's own sink on a PulseAudio server (or PipeWire's pipewire-pulse),
/// through libpulse. The server passes it on to the speaker as AVRCP absolute volume where the
/// speaker supports it (PulseAudio's bluez5 module, PipeWire's bluez5 monitor).
///
/// Each read or write is one short connection: a volume change is rare, and a connection kept
/// open for it would be one more thing to keep alive across sound-server restarts, which the
/// sink watcher already does for readiness.
struct PulseSinkVolume: SpeakerVolume {
    /// The sink's name, as the sink watcher found it by its properties (never guessed).
    let sink: String
    /// A PulseAudio server string; nil lets libpulse find the server as every client does.
    let server: String?

    var deviceDescription: String { "PulseAudio sink \(sink)" }

    func percent() async throws(SpeakerVolumeError) -> Int { try await run(setting: nil) }

    func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int { try await run(setting: percent) }

    private func run(setting target: Int?) async throws(SpeakerVolumeError) -> Int {
        let (sink, server) = (sink, server)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Int, PulseVolumeFailure>, Never>) in
            PulseVolumeRequest.start(server: server, sink: sink, target: target) { continuation.resume(returning: $0) }
        }
        switch result {
        case .success(let percent): return percent
        case .failure(let failure): throw .failed(device: deviceDescription, reason: failure.reason)
        }
    }
}

/// libpulse's sentence for a failed volume request.
struct PulseVolumeFailure: Error {
    let reason: String
}

/// One volume request on its own `pa_context` and `pa_threaded_mainloop`: connect, read the
/// sink, write its volume if asked (every channel alike), read it back, report, disconnect.
///
/// Thread safety: after `start`, `report` and `wrote` are touched only by libpulse's callbacks on
/// the main loop's thread. The request keeps itself alive (one retain) until its teardown, which
/// runs on a thread of its own because stopping the main loop joins the main loop's thread.
private final class PulseVolumeRequest: @unchecked Sendable {
    /// libpulse's `PA_VOLUME_NORM` (100 %), a cast macro Swift does not import.
    static let normal = 0x10000

    private let pulse: PulseLibrary.API
    private let mainloop: OpaquePointer
    private let context: OpaquePointer
    private let sink: String
    private let target: Int?
    private var report: ((Result<Int, PulseVolumeFailure>) -> Void)?
    private var wrote = false

    static func start(server: String?, sink: String, target: Int?,
                      report: @escaping @Sendable (Result<Int, PulseVolumeFailure>) -> Void) {
        let pulse: PulseLibrary.API
        do { pulse = try PulseLibrary.api() } catch {
            report(.failure(PulseVolumeFailure(reason: error.description)))
            return
        }
        guard let mainloop = pulse.pa_threaded_mainloop_new() else {
            report(.failure(PulseVolumeFailure(reason: "libpulse could not create a main loop (out of memory?)")))
            return
        }
        guard let context = pulse.pa_context_new(pulse.pa_threaded_mainloop_get_api(mainloop), "speakerd volume") else {
            pulse.pa_threaded_mainloop_free(mainloop)
            report(.failure(PulseVolumeFailure(reason: "libpulse could not create a connection (out of memory?)")))
            return
        }
        let request = PulseVolumeRequest(pulse: pulse, mainloop: mainloop, context: context, sink: sink, target: target,
                                         report: report)
        request.connect(server: server)
    }

    private init(pulse: PulseLibrary.API, mainloop: OpaquePointer, context: OpaquePointer, sink: String, target: Int?,
                 report: @escaping (Result<Int, PulseVolumeFailure>) -> Void) {
        (self.pulse, self.mainloop, self.context, self.sink, self.target, self.report) =
            (pulse, mainloop, context, sink, target, report)
    }

    private func connect(server: String?) {
        let me = Unmanaged.passRetained(self).toOpaque()
        pulse.pa_context_set_state_callback(context, { context, me in
            guard let context, let me else { return }
            Unmanaged<PulseVolumeRequest>.fromOpaque(me).takeUnretainedValue().stateChanged(context)
        }, me)
        // No autospawn: a daemon must not start a sound server of its own.
        guard pulse.pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            finish(.failure(PulseVolumeFailure(reason: errorText())))
            return
        }
        guard pulse.pa_threaded_mainloop_start(mainloop) >= 0 else {
            finish(.failure(PulseVolumeFailure(reason: "libpulse could not start its main loop thread")))
            return
        }
    }

    /// Reports once, then tears down off the main loop's thread and drops the request's own retain.
    private func finish(_ result: Result<Int, PulseVolumeFailure>) {
        guard let report else { return }
        self.report = nil
        report(result)
        DetachedThread.start(name: "pulse-volume") { [self] in
            pulse.pa_threaded_mainloop_lock(mainloop)
            pulse.pa_context_set_state_callback(context, nil, nil)
            pulse.pa_context_disconnect(context)
            pulse.pa_context_unref(context)
            pulse.pa_threaded_mainloop_unlock(mainloop)
            pulse.pa_threaded_mainloop_stop(mainloop)
            pulse.pa_threaded_mainloop_free(mainloop)
            Unmanaged.passUnretained(self).release()
        }
    }

    private func errorText() -> String {
        pulse.pa_strerror(pulse.pa_context_errno(context)).map { String(cString: $0) } ?? "unknown error"
    }

    // MARK: - On the main loop's thread

    private func stateChanged(_ context: OpaquePointer) {
        let state = pulse.pa_context_get_state(context)
        if state == PA_CONTEXT_READY {
            readSink()
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            finish(.failure(PulseVolumeFailure(reason: errorText())))
        }
    }

    private func readSink() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_get_sink_info_by_name(context, sink, { _, info, end, me in
            guard let me else { return }
            let request = Unmanaged<PulseVolumeRequest>.fromOpaque(me).takeUnretainedValue()
            if let info { request.sinkRead(info.pointee.volume) } else if end < 0 { request.sinkMissing() }
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { finish(.failure(PulseVolumeFailure(reason: errorText()))) }
    }

    private func sinkMissing() {
        finish(.failure(PulseVolumeFailure(reason: "the sound server has no sink \(sink) (\(errorText().lowercased()))")))
    }

    private func sinkRead(_ volume: pa_cvolume) {
        var volume = volume
        guard let target, !wrote else {
            let loudest = Int(pulse.pa_cvolume_max(&volume))
            finish(.success((loudest * 100 + Self.normal / 2) / Self.normal))
            return
        }
        _ = pulse.pa_cvolume_set(&volume, UInt32(volume.channels), pa_volume_t(target * Self.normal / 100))
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_set_sink_volume_by_name(context, sink, &volume, { _, success, me in
            guard let me else { return }
            Unmanaged<PulseVolumeRequest>.fromOpaque(me).takeUnretainedValue().written(success != 0)
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { finish(.failure(PulseVolumeFailure(reason: errorText()))) }
    }

    private func written(_ success: Bool) {
        guard success else {
            finish(.failure(PulseVolumeFailure(reason: errorText())))
            return
        }
        wrote = true
        readSink()  // What the server made of it: a sink may round, or refuse more than it can.
    }
}
