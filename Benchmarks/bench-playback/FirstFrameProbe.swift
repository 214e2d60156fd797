import AsyncSignals
import Playback
import Daemon

/// An output that records the instant the first block of audio exists, then ends the song: the
/// "play request → first audio frame" benchmark measures up to that instant.
///
/// A signal, not a stored value read after `play` returns: `play` returns once the song has
/// started, which the source announces from inside `render`, so it can return before this
/// output has taken its timestamp.
final class FirstFrameProbe: AudioOutput {
    private let firstFrame = OneShotSignal<ContinuousClock.Instant, Never>()

    var description: String { "first-frame probe" }

    /// The instant the first block existed (waits for it).
    func firstFrameInstant() async throws -> ContinuousClock.Instant {
        try await firstFrame.result().get()
    }

    func play(_ source: PlaybackSource) async throws {
        var buffer = [Int16](repeating: 0, count: 1024 * 2)
        let frames = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
        if frames > 0 {
            _ = firstFrame.succeed(ContinuousClock.now)
        }
        source.stop()
    }
}
