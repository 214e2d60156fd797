internal import CPulse
import AsyncSignals

/// One short request to a PulseAudio server (or pipewire-pulse) on its own `pa_context` and
/// `pa_threaded_mainloop`: connect, run the subclass's request once the context is ready, and
/// tear down when the subclass calls `close()`.
///
/// Short connections suit what is rare (a volume change, a card's profile switch): one kept open
/// would be one more thing to keep alive across sound-server restarts, which the sink watcher
/// already does for readiness.
///
/// Thread safety: `ready()` and `failed(_:)` run on the main loop's thread (or, for a failure to
/// start, on the caller's before the thread exists). The request keeps itself alive (one retain)
/// from `start` until its teardown, which runs on a thread of its own because stopping the main
/// loop joins the main loop's thread.
class PulseRequest: @unchecked Sendable {
    private(set) var connection: PulseConnection?
    private var closed = false

    var pulse: PulseLibrary.API? { connection?.pulse }
    var context: OpaquePointer? { connection?.context }

    /// Connects to `server` (nil: libpulse's own choice; never autospawned) as client `name`.
    final func start(server: String?, name: String) {
        switch PulseConnection.make(name: name) {
        case .failure(let error):
            failed(error.reason)
        case .success(let connection):
            self.connection = connection
            // Released by the teardown, which clears the state callback first (so it may be unowned).
            _ = Unmanaged.passRetained(self)
            let problem = connection.connect(server: server) { [unowned self] state in stateChanged(state) }
            if let problem { failed(problem) }
        }
    }

    /// The context is connected: make the request.
    func ready() {}

    /// The request failed with libpulse's (or our) sentence; subclasses report it and `close()`.
    func failed(_ reason: String) {}

    /// Tears the connection down off the main loop's thread and drops the request's own retain.
    final func close() {
        guard !closed, let connection else { return }
        closed = true
        DetachedThread.start(name: "pulse-request") { [self] in
            connection.teardown()
            Unmanaged.passUnretained(self).release()
        }
    }

    final func errorText() -> String { connection?.errorText ?? "unknown error" }

    private func stateChanged(_ state: pa_context_state_t) {
        if state == PA_CONTEXT_READY {
            ready()
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            failed(errorText())
        }
    }
}

/// Switches a card to a profile (a speaker's card left in a headset profile, to A2DP).
final class PulseCardProfileRequest: PulseRequest, @unchecked Sendable {
    private let card: UInt32
    private let profile: String
    private var report: ((String?) -> Void)?

    /// Reports nil once the server has switched `card` to `profile`, else why not.
    static func switchProfile(server: String?, card: UInt32, to profile: String) async -> String? {
        await withCheckedContinuation { continuation in
            let request = PulseCardProfileRequest(card: card, profile: profile) { continuation.resume(returning: $0) }
            request.start(server: server, name: "speakerd card profile")
        }
    }

    private init(card: UInt32, profile: String, report: @escaping (String?) -> Void) {
        (self.card, self.profile, self.report) = (card, profile, report)
    }

    private func finish(_ problem: String?) {
        guard let report else { return }
        self.report = nil
        report(problem)
        close()
    }

    override func failed(_ reason: String) { finish(reason) }

    override func ready() {
        guard let pulse, let context else { return }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_set_card_profile_by_index(context, card, profile, { _, success, me in
            guard let me else { return }
            let request = Unmanaged<PulseCardProfileRequest>.fromOpaque(me).takeUnretainedValue()
            request.finish(success != 0 ? nil : request.errorText())
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { failed(errorText()) }
    }
}

/// What the rest of speakerd may ask a sound server in one short request, each on its own
/// connection (``PulseRequest``).
public enum PulseRequests {
    /// Switches `card` to `profile` (a speaker's card left in a headset profile, to A2DP): nil
    /// once the server has switched it, else the server's reason.
    public static func switchCardProfile(server: String?, card: UInt32, to profile: String) async -> String? {
        await PulseCardProfileRequest.switchProfile(server: server, card: card, to: profile)
    }

    /// Reads the sink's volume in percent, after setting every channel to `target` when given.
    public static func sinkVolume(server: String?, sink: String, setting target: Int?) async -> Result<Int, PulseVolumeFailure> {
        await withCheckedContinuation { continuation in
            PulseVolumeRequest.start(server: server, sink: sink, target: target) { continuation.resume(returning: $0) }
        }
    }
}
