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
        // libasound (loaded with FluidSynth) prints "ALSA lib …" lines to stderr by itself, which
        // would reach the journal raw: keep them for the device's error instead.
        speakerd_alsa_capture_errors()
    }

    fileprivate static let lastErrorMessage = Mutex<String?>(nil)

    /// Forgets any earlier error, so the next `takeLastError()` only reports what follows.
    static func clearLastError() {
        lastErrorMessage.withLock { $0 = nil }
        _ = takeALSAError()
    }

    /// libasound's first message since the last call ("Unknown PCM nosuchdevice"), if any.
    static func takeALSAError() -> String? {
        var message = [CChar](repeating: 0, count: 256)
        guard speakerd_alsa_take_error(&message, message.count) != 0 else { return nil }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? nil : text
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
