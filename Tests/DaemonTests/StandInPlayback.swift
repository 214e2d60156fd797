@testable import SpeakerCore
@testable import SpeakerdAPI
import SystemPackage

/// A playback side for daemon tests that only care about one or two of its steps: everything
/// succeeds at once and nothing plays (a song's descriptor is closed, as the real side would
/// once it has read it). A test's stand-in implements just the steps it holds or records.
protocol StandInPlayback: DaemonPlayback {}

extension StandInPlayback {
    func preloadSoundfont(_ path: String) async throws {}
    func audioPath(to speaker: LinkSnapshot.Target?) -> AsyncStream<ReadinessInputs.AudioPath> {
        AsyncStream { $0.yield(.ready("the stand-in output")); $0.finish() }
    }
    func abandonWaiting(because reason: String) async {}
    func play(file: FileDescriptor, displayName: String, queue: Bool,
              blocker: @escaping @Sendable () async -> String?) async throws { try? file.close() }
    func stop() async {}
    func pause() async throws {}
    func resume() async throws {}
    func speakerLost() async {}
    func speakerBack() async {}
    func snapshot() async -> StatusReport.Playback { .idle }
}
