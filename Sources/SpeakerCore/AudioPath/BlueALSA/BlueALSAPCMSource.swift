/// Where the set of BlueALSA PCMs comes from: BlueALSA's D-Bus object manager in the daemon, a
/// scripted fake in tests. Keeping this boundary small is what makes audio-path readiness
/// testable without a bus.
public protocol BlueALSAPCMSource: Sendable {
    /// Every PCM BlueALSA offers now, then the whole set again after each change (a PCM added or
    /// removed, BlueALSA restarting: an empty set while it is gone). The stream ends when the
    /// consumer stops iterating, and throws if the source itself fails (the bus is lost).
    func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error>
    /// Like `pcmSets()`, but tells "BlueALSA is not running" (nil) apart from "running with no
    /// PCM for anyone yet" (an empty set), so a status can say which.
    func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error>
    /// The volume of the PCM at `path` (its `Volume` property); nil when this source cannot reach
    /// BlueALSA's properties (a source that only lists PCMs).
    func volume(ofPCM path: String) -> (any SpeakerVolume)?
    /// The PCM's `Delay` (what the codec and the Bluetooth transport add before the speaker
    /// plays a sample, as BlueALSA estimates it); nil when it cannot be read: this source cannot
    /// reach BlueALSA's properties, the PCM is gone, or the reply is not the documented `q`.
    func delay(ofPCM path: String) async -> Duration?
}

extension BlueALSAPCMSource {
    public func volume(ofPCM path: String) -> (any SpeakerVolume)? { nil }
    public func delay(ofPCM path: String) async -> Duration? { nil }

    /// A source that cannot tell BlueALSA's absence reports every set as from a running BlueALSA.
    public func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error> {
        let sets = pcmSets()
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await set in sets { continuation.yield(set) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// Why the audio path to a speaker is not ready.
public enum BlueALSAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// BlueALSA offered no A2DP playback PCM for the speaker within the time allowed.
    case noPCM(address: String, after: Duration)
    /// The wait was cancelled (the request that needed it went away).
    case cancelled(address: String)
    /// The PCM list could not be read (BlueALSA or the bus failed); `reason` is one line.
    case unavailable(reason: String)
    /// The PCM list ended (the source shut down) before the speaker's PCM appeared.
    case sourceEnded(address: String)

    public var description: String {
        switch self {
        case let .noPCM(address, after):
            "BlueALSA has no A2DP output for speaker \(address) after \(after.spokenSeconds); is bluealsa running with the a2dp-source profile?"
        case let .cancelled(address):
            "stopped waiting for BlueALSA's output for speaker \(address)"
        case let .unavailable(reason):
            "cannot read BlueALSA's outputs: \(reason)"
        case let .sourceEnded(address):
            "BlueALSA's output list ended before speaker \(address) appeared"
        }
    }
}
