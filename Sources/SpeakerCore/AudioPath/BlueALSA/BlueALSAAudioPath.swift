import AsyncSignals
import BlueZ
/// Audio-path readiness for a speaker played through BlueALSA.
///
/// BlueZ says `Connected` as soon as the baseband link is up, but audio can flow only once the
/// A2DP transport exists and BlueALSA has published its PCM for the speaker; opening
/// `bluealsa:DEV=…` before that fails. The daemon raises `.playbackReady` only after
/// ``waitUntilReady(for:timeout:)`` returns, and drops the gate when ``availability(of:)`` says
/// the PCM went away.
public struct BlueALSAAudioPath: Sendable {
    public let source: any BlueALSAPCMSource
    let clock: any Clock<Duration>

    public init(source: any BlueALSAPCMSource, clock: any Clock<Duration> = ContinuousClock()) {
        self.source = source
        self.clock = clock
    }

    /// The ALSA device name for `address` (`bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp`).
    public func alsaDevice(for address: BluetoothAddress) -> String {
        BlueALSAPCM.alsaDevice(for: address)
    }

    /// Returns the speaker's A2DP playback PCM as soon as BlueALSA offers it (at once if it
    /// already does); waits at most `timeout` on the injected clock when one is given.
    public func waitUntilReady(for address: BluetoothAddress, timeout: Duration? = nil) async throws(BlueALSAError) -> BlueALSAPCM {
        let source = source
        let find: @Sendable () async throws -> BlueALSAPCM = {
            for try await pcms in source.pcmSets() {
                if let pcm = pcms.first(where: { $0.isA2DPPlayback && $0.address == address }) { return pcm }
            }
            try Task.checkCancellation()
            throw BlueALSAError.sourceEnded(address: address.description)
        }
        do {
            guard let timeout else { return try await find() }
            switch try await timeboxed(timeout, clock: clock, find) {
            case let .finished(pcm): return pcm
            case .timedOut: throw BlueALSAError.noPCM(address: address.description, after: timeout)
            }
        } catch let error as BlueALSAError {
            throw error
        } catch is CancellationError {
            throw .cancelled(address: address.description)
        } catch {
            throw .unavailable(reason: "\(error)")
        }
    }

    /// Whether the speaker's A2DP playback PCM exists: the current answer first, then each change
    /// (never the same value twice in a row). Ends when the consumer stops iterating or the
    /// source ends; a failing source reads as "not available" and ends the stream.
    public func availability(of address: BluetoothAddress) -> AsyncStream<Bool> {
        let source = source
        return AsyncStream { continuation in
            let task = Task {
                var last: Bool?
                do {
                    for try await pcms in source.pcmSets() {
                        let present = pcms.contains { $0.isA2DPPlayback && $0.address == address }
                        if present != last {
                            continuation.yield(present)
                            last = present
                        }
                    }
                } catch {
                    if last == true { continuation.yield(false) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
