@testable import AudioPath
@testable import Daemon
@testable import SpeakerdAPI
import DBus
import Playback
@testable import PlaybackService
import ServiceLifecycle
import SystemPackage

/// A playback side for daemon tests that only care about one or two of its steps: everything
/// succeeds at once and nothing plays (a song's descriptor is closed, as the real side would
/// once it has read it). A test's stand-in implements just the steps it holds or records.
protocol StandInPlayback: DaemonPlayback {}

extension StandInPlayback {
    func preloadSoundfont(_ path: String) async throws {}
    func routeChanged(to speaker: TargetSpeaker?, route: AudioRoute?) async {}
    func readinessChanged(_ waiting: PlaybackWait?) async {}
    func play(file: FileDescriptor, displayName: String, queue: Bool) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try? file.close()
        return .idle
    }
    func stop() async -> PlaybackSnapshot { .idle }
    func pause() async throws(PlaybackServiceError) -> PlaybackSnapshot { .idle }
    func resume() async throws(PlaybackServiceError) -> PlaybackSnapshot { .idle }
    func skip() async throws(PlaybackServiceError) -> PlaybackSnapshot { .idle }
    func clearQueue() async -> PlaybackSnapshot { .idle }
    func adjust(_ control: LiveControl) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        throw .nothingPlaying(operation: control.name)
    }
    func snapshot() async -> PlaybackSnapshot { .idle }
    /// A stand-in that never changes by itself has nothing to report.
    func changes() async -> AsyncStream<PlaybackSnapshot> { AsyncStream { $0.finish() } }
    var lifecycleService: (any Service)? { nil }
}

/// An audio backend for daemon tests that steer the audio path (a device appearing or not): a
/// test's stand-in implements `paths(to:over:)` and is handed to the daemon as its `audio`. Its
/// routes open the null output and have no volume unless the stand-in offers one.
protocol StandInAudio: AudioBackend {}

extension StandInAudio {
    func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput { NullOutput(pacing: .realTime(ContinuousClock())) }
    /// A stand-in that does not say which device it plays to has no volume to offer.
    func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        throw .notAvailable(output: "this playback engine")
    }
    var outputGoesWithSpeaker: Bool { false }
}

extension AudioRoute {
    /// A route a stand-in reports ready, described as `description`.
    static func standIn(_ description: String) -> AudioRoute {
        AudioRoute(by: NullBackend.self, device: nil, description: description)
    }
}
