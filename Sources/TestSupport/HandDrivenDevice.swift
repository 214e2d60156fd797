// A device output's device is Playback's own business (`AudioDevice`, `DeviceOutput`'s opener,
// `PlaybackSource.renderForDevice` are internal), so this double sees them through a testable
// import. Tests only build in debug, where SwiftPM compiles every module for testing; a release
// build of TestSupport leaves the device out rather than fail.
#if DEBUG
import Clocks
@testable import Playback
import Synchronization

/// A sound device the test drives: `pull` asks the song for one period, as a driver thread would.
/// Shared by the device watchdog's tests (PlaybackTests) and the player's (PlaybackServiceTests).
public final class HandDrivenDevice: AudioDevice, Sendable {
    /// How long the outputs it makes wait for the device to ask for audio before the song fails.
    public static let stallLimit: Duration = .seconds(3)

    private let pullsOnOpen: Int
    private let latencyFrames: Int?
    private let records: Bool
    private let opened = Mutex<PlaybackSource?>(nil)
    private let openCount = Mutex(0)
    private let recording = Mutex<[Float]>([])

    /// - Parameters:
    ///   - latencyFrames: the latency the device reports when it opens, as a sound server's
    ///     stream does (the listener hears each frame that much later); none by default.
    ///   - records: keep every frame pulled (left channel) in `recorded`, what the speaker hears.
    public init(pullsOnOpen: Int, latencyFrames: Int? = nil, records: Bool = false) {
        self.pullsOnOpen = pullsOnOpen
        self.latencyFrames = latencyFrames
        self.records = records
    }

    /// Every frame pulled so far (left channel), when made with `records`.
    public var recorded: [Float] { recording.withLock { $0 } }

    public var source: PlaybackSource? { opened.withLock { $0 } }
    /// How many times an output opened the device.
    public var opens: Int { openCount.withLock { $0 } }

    public func output(clock: TestClock<Duration>) -> DeviceOutput {
        DeviceOutput(.alsa(device: "hand-driven"), clock: clock, stallLimit: Self.stallLimit) { _, source in
            self.opened.withLock { $0 = source }
            self.openCount.withLock { $0 += 1 }
            if let latency = self.latencyFrames { source.reportDeviceLatency(frames: latency) }
            self.pull(times: self.pullsOnOpen)
            return self
        }
    }

    /// Reports a gap, as a sound server's underflow does: where in the device's stream the audio
    /// ran out, if the device says.
    public func underflow(atStreamFrame frame: Int? = nil) { source?.noteOutputUnderflow(atStreamFrame: frame) }

    /// A hand-driven device has no back-end to explain itself.
    public func failureReason() -> String? { nil }

    /// Asks for `times` periods of 64 frames (FluidSynth's default period size).
    public func pull(times: Int) {
        guard let source else { return }
        var left = [Float](repeating: 0, count: 64), right = [Float](repeating: 0, count: 64)
        for _ in 0..<times {
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    _ = source.renderForDevice(left: l.baseAddress!, right: r.baseAddress!, frames: 64)
                }
            }
            if records { recording.withLock { $0 += left } }
        }
    }
}
#endif
