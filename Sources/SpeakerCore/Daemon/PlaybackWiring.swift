import AudioPath
import PlaybackService
import Readiness
import SpeakerdAPI

/// What a playback side needs from the daemon that builds it: the daemon's readiness gate (songs
/// wait in it for `.playbackReady`), clock and audio backend (songs open their outputs on it).
///
/// The gate exists only once the daemon does, so `DaemonDependencies.makePlayback` receives this
/// rather than being built beforehand. Everything else reaches the playback side as values or
/// events through `DaemonPlayback` (the route with each change of the path, the reason with each
/// change of readiness).
public struct PlaybackWiring: Sendable {
    public let gate: ReadinessGate<DaemonReadiness>
    public let clock: any Clock<Duration>
    public let audio: any AudioBackend

    public init(gate: ReadinessGate<DaemonReadiness>, clock: any Clock<Duration>, audio: any AudioBackend) {
        self.gate = gate
        self.clock = clock
        self.audio = audio
    }
}
