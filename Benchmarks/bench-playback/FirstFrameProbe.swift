import SpeakerCore
import Synchronization

/// An output that records the instant the first block of audio exists, then ends the song: the
/// "play request → first audio frame" benchmark measures up to that instant.
final class FirstFrameProbe: AudioOutput {
    private let firstFrame = Mutex<ContinuousClock.Instant?>(nil)

    var description: String { "first-frame probe" }

    var firstFrameInstant: ContinuousClock.Instant? { firstFrame.withLock { $0 } }

    func play(_ source: PlaybackSource) async throws {
        var buffer = [Int16](repeating: 0, count: 1024 * 2)
        let frames = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
        if frames > 0 {
            let now = ContinuousClock.now
            firstFrame.withLock { $0 = now }
        }
        source.stop()
    }
}
