internal import CPulse

/// libpulse's sentence for a failed volume request.
public struct PulseVolumeFailure: Error {
    public let reason: String
}

/// One volume request on its own connection (``PulseRequest``): read the sink, write its volume
/// if asked (every channel alike), read it back, report.
///
/// Thread safety: `report` and `wrote` are touched only by libpulse's callbacks on the main
/// loop's thread (and `finish`, called from them).
final class PulseVolumeRequest: PulseRequest, @unchecked Sendable {
    /// libpulse's `PA_VOLUME_NORM` (100 %), a cast macro Swift does not import.
    static let normal = 0x10000

    private let sink: String
    private let target: Int?
    private var report: ((Result<Int, PulseVolumeFailure>) -> Void)?
    private var wrote = false

    static func start(server: String?, sink: String, target: Int?,
                      report: @escaping @Sendable (Result<Int, PulseVolumeFailure>) -> Void) {
        let request = PulseVolumeRequest(sink: sink, target: target, report: report)
        request.start(server: server, name: "speakerd volume")
    }

    private init(sink: String, target: Int?, report: @escaping (Result<Int, PulseVolumeFailure>) -> Void) {
        (self.sink, self.target, self.report) = (sink, target, report)
    }

    private func finish(_ result: Result<Int, PulseVolumeFailure>) {
        guard let report else { return }
        self.report = nil
        report(result)
        close()
    }

    override func failed(_ reason: String) { finish(.failure(PulseVolumeFailure(reason: reason))) }

    // MARK: - On the main loop's thread

    override func ready() {
        guard let pulse, let context else { return }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_get_sink_info_by_name(context, sink, { _, info, end, me in
            guard let me else { return }
            let request = Unmanaged<PulseVolumeRequest>.fromOpaque(me).takeUnretainedValue()
            if let info { request.sinkRead(info.pointee.volume) } else if end < 0 { request.sinkMissing() }
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { failed(errorText()) }
    }

    private func sinkMissing() {
        failed("the sound server has no sink \(sink) (\(errorText().lowercased()))")
    }

    private func sinkRead(_ volume: pa_cvolume) {
        guard let pulse, let context else { return }
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
        if let operation { pulse.pa_operation_unref(operation) } else { failed(errorText()) }
    }

    private func written(_ success: Bool) {
        guard success else {
            failed(errorText())
            return
        }
        wrote = true
        ready()  // Read the sink again: what the server made of it (a sink may round, or refuse more than it can).
    }
}
