import PlaybackService
import Readiness
import SpeakerdAPI

/// What a playback side needs from the daemon that builds it: the daemon's readiness gate (songs
/// wait in it for `.playbackReady`) and clock.
///
/// The gate exists only once the daemon does, so `DaemonDependencies.makePlayback` receives this
/// rather than being built beforehand. Everything else reaches the playback side as values or
/// events through `DaemonPlayback` (the bus with each speaker, the reason with each change).
public struct PlaybackWiring: Sendable {
    public let gate: ReadinessGate<DaemonReadiness>
    public let clock: any Clock<Duration>

    public init(gate: ReadinessGate<DaemonReadiness>, clock: any Clock<Duration>) {
        self.gate = gate
        self.clock = clock
    }
}
