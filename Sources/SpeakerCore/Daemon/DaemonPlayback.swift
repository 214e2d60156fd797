import ServiceLifecycle
import SpeakerdAPI
import SystemPackage

/// What the daemon needs from the playback engine; the engine adapter implements it.
///
/// A protocol so the coordinator and its tests do not depend on FluidSynth being present,
/// and so the audio engineer's engine can evolve behind it.
public protocol DaemonPlayback: Sendable {
    /// Loads the soundfont once (the start-up `soundfont` step; again before a `play` while it
    /// is missing, so installing it is enough).
    func preloadSoundfont(_ path: String) async throws
    /// The audio path to `speaker` under the configured output (see ``AudioPathMonitor``): the
    /// current state, then each change. Songs from now on play to this speaker.
    func audioPath(to speaker: LinkSnapshot.Target?) -> AsyncStream<ReadinessInputs.AudioPath>
    /// Starts (or queues) a song read from `file`, which the playback side now owns. Once the
    /// song is read and valid (a broken file fails first, whatever else is wrong), and only if
    /// it would have to wait, `blocker` is asked why waiting cannot succeed: a sentence fails
    /// the request at once with it.
    func play(file: FileDescriptor, displayName: String, queue: Bool,
              blocker: @escaping @Sendable () async -> String?) async throws
    /// Waiting can no longer succeed (the user disconnected, the soundfont is gone…): every song
    /// still waiting for readiness fails now with `reason`, instead of at its timeout.
    func abandonWaiting(because reason: String) async
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
    /// The volume of the audio device the path to the speaker goes through now (asked only while
    /// that path is ready). Throws `notAvailable` for an output without hardware volume.
    func speakerVolume() throws(SpeakerVolumeError) -> any SpeakerVolume
    /// The part of the playback side that needs an orderly shutdown in the daemon's service
    /// group (after the daemon, so a song's output is closed complete), if any.
    var lifecycleService: (any Service)? { get }
    /// Under `audio_output = auto`, what was chosen for the speaker and why (for `status`).
    var automaticOutput: AutomaticOutput? { get }
    /// What the playback side did to the speaker's sound-server cards that the user should know
    /// even once the path is ready (a headset card switched to A2DP), for `status`'s warnings.
    var audioPathWarnings: [String] { get }
}

extension DaemonPlayback {
    public var lifecycleService: (any Service)? { nil }
    public var automaticOutput: AutomaticOutput? { nil }
    public var audioPathWarnings: [String] { [] }

    /// A playback side that does not say which device it plays to has no volume to offer.
    public func speakerVolume() throws(SpeakerVolumeError) -> any SpeakerVolume {
        throw .notAvailable(output: "this playback engine")
    }

    /// A playback side that never changes by itself has nothing to report.
    public func changes() async -> AsyncStream<StatusReport.Playback> {
        AsyncStream { $0.finish() }
    }
}
