import SystemPackage

/// What the daemon needs from the playback engine; the engine adapter implements it.
///
/// A protocol so the coordinator and its tests do not depend on FluidSynth being present,
/// and so the audio engineer's engine can evolve behind it.
public protocol DaemonPlayback: Sendable {
    /// Loads the soundfont once (the start-up `soundfont` step).
    func preloadSoundfont(_ path: String) async throws
    /// Checks that the configured output can be opened (the `audioBackend` step).
    func checkOutput() async throws
    /// Waits until the audio path to `speaker` is really there (BlueALSA PCM; file/null at once).
    func waitForAudioPath(speaker: String?) async throws
    /// Starts (or queues) a song read from `file`, which the playback side now owns.
    func play(file: FileDescriptor, displayName: String, queue: Bool) async throws
    func stop() async
    func pause() async throws
    func resume() async throws
    /// The speaker dropped mid-song: pause (to resume after reconnect) or stop, per config.
    func speakerLost() async
    func speakerBack() async
    /// What is playing, for status.
    func snapshot() async -> StatusReport.Playback
    /// Playback's status after each change it makes by itself (a song ends, the next one starts,
    /// progress), so the daemon's status and PlaybackChanged signal follow it.
    func changes() async -> AsyncStream<StatusReport.Playback>
}

extension DaemonPlayback {
    /// A playback side that never changes by itself has nothing to report.
    public func changes() async -> AsyncStream<StatusReport.Playback> {
        AsyncStream { $0.finish() }
    }
}
