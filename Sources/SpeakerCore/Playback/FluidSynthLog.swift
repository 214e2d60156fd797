internal import CFluidSynth
import Synchronization

/// Routes FluidSynth's own log lines: by default it prints warnings such as "Instrument not found
/// … substituted" and errors on stderr, which would break the one-clear-line rule of
/// `composer-cli` and clutter the daemon's journal with messages we already report better.
///
/// Warnings, information and debug lines are dropped; the latest error is kept so a typed error
/// can quote FluidSynth's reason (for example why an ALSA device could not be opened).
enum FluidSynthLog {
    /// Installs the handlers; `FluidSynthLibrary` calls it once, when it opens the library and
    /// before any FluidSynth object exists.
    static func install(_ fluid: FluidSynthLibrary.API) {
        _ = fluid.fluid_set_log_function(Int32(FLUID_PANIC.rawValue), recordFluidSynthError, nil)
        _ = fluid.fluid_set_log_function(Int32(FLUID_ERR.rawValue), recordFluidSynthError, nil)
        _ = fluid.fluid_set_log_function(Int32(FLUID_WARN.rawValue), nil, nil)
        _ = fluid.fluid_set_log_function(Int32(FLUID_INFO.rawValue), nil, nil)
        _ = fluid.fluid_set_log_function(Int32(FLUID_DBG.rawValue), nil, nil)
    }

    fileprivate static let lastErrorMessage = Mutex<String?>(nil)

    /// Forgets any earlier error, so the next `takeLastError()` only reports what follows.
    static func clearLastError() {
        lastErrorMessage.withLock { $0 = nil }
    }

    /// The latest error FluidSynth logged since `clearLastError()`, if any.
    static func takeLastError() -> String? {
        lastErrorMessage.withLock { message in
            defer { message = nil }
            return message
        }
    }
}

private func recordFluidSynthError(level: Int32, message: UnsafePointer<CChar>?, data: UnsafeMutableRawPointer?) {
    guard let message else { return }
    let text = String(cString: message)
    FluidSynthLog.lastErrorMessage.withLock { $0 = text }
}
