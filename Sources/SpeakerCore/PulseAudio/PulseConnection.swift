internal import CPulse

/// One connection to a sound server: libpulse's threaded main loop (a thread of its own, so no
/// Swift concurrency thread ever waits on the server) and a context on it. The sink watcher's
/// sessions, the short requests and the speaker's stream each own one.
///
/// Thread safety: `stateChanged` and every callback an owner sets on `context` run on the main
/// loop's thread, with the main loop's lock held. `teardown` takes that lock before it
/// disconnects, so no callback runs during or after it; it joins the main loop's thread, so call
/// it off that thread (owners hand it to a `DetachedThread`).
final class PulseConnection: @unchecked Sendable {
    let pulse: PulseLibrary.API
    let mainloop: OpaquePointer
    let context: OpaquePointer
    private var stateChanged: ((pa_context_state_t) -> Void)?

    /// A main loop and a context named `name` (how the server lists the client), not connected
    /// yet; nil with the reason when libpulse is missing or out of memory.
    static func make(name: String) -> Result<PulseConnection, PulseConnectionError> {
        let pulse: PulseLibrary.API
        do { pulse = try PulseLibrary.api() } catch { return .failure(PulseConnectionError(reason: error.description)) }
        guard let mainloop = pulse.pa_threaded_mainloop_new() else {
            return .failure(PulseConnectionError(reason: "libpulse could not create a main loop (out of memory?)"))
        }
        guard let context = pulse.pa_context_new(pulse.pa_threaded_mainloop_get_api(mainloop), name) else {
            pulse.pa_threaded_mainloop_free(mainloop)
            return .failure(PulseConnectionError(reason: "libpulse could not create a connection (out of memory?)"))
        }
        return .success(PulseConnection(pulse: pulse, mainloop: mainloop, context: context))
    }

    private init(pulse: PulseLibrary.API, mainloop: OpaquePointer, context: OpaquePointer) {
        (self.pulse, self.mainloop, self.context) = (pulse, mainloop, context)
    }

    /// Connects to `server` (nil: libpulse's own choice; never autospawned: a daemon must not
    /// start a sound server of its own) and starts the main loop's thread. `stateChanged` hears
    /// every state of the context; `configure` sets the owner's other callbacks first. Returns
    /// why it could not start, or nil.
    ///
    /// Holds the main loop's lock throughout: libpulse reports a failed connect to the state
    /// callback before `pa_context_connect` returns, and an owner that then closes at once must
    /// not have the context freed while this still touches it.
    func connect(server: String?, configure: (OpaquePointer) -> Void = { _ in },
                 stateChanged: @escaping (pa_context_state_t) -> Void) -> String? {
        pulse.pa_threaded_mainloop_lock(mainloop)
        defer { pulse.pa_threaded_mainloop_unlock(mainloop) }
        self.stateChanged = stateChanged
        pulse.pa_context_set_state_callback(context, { context, me in
            guard let context, let me else { return }
            let connection = Unmanaged<PulseConnection>.fromOpaque(me).takeUnretainedValue()
            connection.stateChanged?(connection.pulse.pa_context_get_state(context))
        }, Unmanaged.passUnretained(self).toOpaque())
        configure(context)
        guard pulse.pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else { return errorText }
        guard pulse.pa_threaded_mainloop_start(mainloop) >= 0 else { return "libpulse could not start its main loop thread" }
        return nil
    }

    /// libpulse's sentence for the context's last error.
    var errorText: String {
        pulse.pa_strerror(pulse.pa_context_errno(context)).map { String(cString: $0) } ?? "unknown error"
    }

    /// Disconnects and ends the main loop, joining its thread. `detach` runs first, under the
    /// lock: the owner clears its own callbacks and frees what it made on the context (a stream).
    func teardown(detach: (OpaquePointer) -> Void = { _ in }) {
        pulse.pa_threaded_mainloop_lock(mainloop)
        detach(context)
        pulse.pa_context_set_state_callback(context, nil, nil)
        stateChanged = nil
        pulse.pa_context_disconnect(context)
        pulse.pa_context_unref(context)
        pulse.pa_threaded_mainloop_unlock(mainloop)
        pulse.pa_threaded_mainloop_stop(mainloop)
        pulse.pa_threaded_mainloop_free(mainloop)
    }
}

/// Why a connection to the sound server could not even be made (libpulse missing, no memory).
struct PulseConnectionError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
