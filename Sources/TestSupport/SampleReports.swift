import SpeakerdAPI

/// Reports as speakerd sends them, for the tests of what the daemon says and what composer-cli
/// makes of it.
public enum SampleReports {
    /// song.mid paused at 1:12 of 3:04 on a connected JBL Flip 5, with the daemon's own sentence.
    public static let paused = StatusReport(
        readiness: "playbackReady", message: "Paused song.mid on JBL Flip 5",
        speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
        playback: .init(state: "paused", file: "song.mid", positionSeconds: 72, durationSeconds: 184))
}
