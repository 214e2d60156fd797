import Playback
import AudioPath
import DBus
import ServiceLifecycle
import SpeakerdAPI
import SystemPackage

/// The daemon's playback port: what it asks of the side that plays songs. `Player` implements it.
///
/// A protocol so the daemon's tests can stand in a playback side that holds or records one step.
/// What the daemon knows reaches the playback side as values and events (the speaker and the
/// route to it in `routeChanged(to:route:)`, the readiness reason in `readinessChanged(_:)`); the
/// playback side follows no audio path and never reads the daemon's state. Snapshots and errors
/// are playback's own types; the daemon maps them to the API's records and error names once,
/// where it answers a client.
public protocol DaemonPlayback: Sendable {
    /// Loads the soundfont once (the start-up `soundfont` step; again before a `play` while it
    /// is missing, so installing it is enough).
    func preloadSoundfont(_ path: String) async throws
    /// Songs from now on play to `speaker`, on `route` (the audio backend's ready route; nil while
    /// the path is not ready). Told before each readiness change the path causes, so a song that
    /// the gate lets start opens its output on the route that made it ready.
    func routeChanged(to speaker: TargetSpeaker?, route: AudioRoute?) async
    /// What the daemon waits for before songs can play (nil once ready), after each change of
    /// its verdict: a song waiting when waiting can no longer succeed fails with that reason,
    /// a song plays, pauses or resumes with the speaker, and a play timeout names the reason.
    func readinessChanged(_ waiting: PlaybackWait?) async
    /// Starts (or queues) a song read from `file`, which the playback side now owns, and returns
    /// once it has started or been queued. A broken file fails first, whatever else is wrong;
    /// then a song that would have to wait fails at once when waiting cannot succeed.
    func play(file: FileDescriptor, displayName: String, queue: Bool) async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// `play(file:displayName:queue:)` for a request from a client (`request.client`), whose
    /// songs being read count against that client's share of the read budget.
    func play(_ request: PlayRequest) async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// Stops the song (or the one waiting) and empties the queue; returns the snapshot after it.
    @discardableResult func stop() async -> PlaybackSnapshot
    /// Pauses the song until `resume`; returns the snapshot after it.
    @discardableResult func pause() async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// Resumes a paused song (or marks it to resume once the speaker is back); returns the snapshot after it.
    @discardableResult func resume() async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// Ends the current song and starts the next queued one (`composer-cli skip`); returns the
    /// snapshot after it.
    @discardableResult func skip() async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// Empties the queue; the current song plays on (`composer-cli clear`).
    @discardableResult func clearQueue() async -> PlaybackSnapshot
    /// A composer's control on the song playing or paused (`composer-cli seek`, `loop`, `tempo`,
    /// `transpose`, `mute`, `solo`, `unmute`); returns the snapshot after it.
    @discardableResult func adjust(_ control: LiveControl) async throws(PlaybackServiceError) -> PlaybackSnapshot
    /// What is playing, for status.
    func snapshot() async -> PlaybackSnapshot
    /// Playback's snapshot after each change it makes by itself (a song ends, the next one
    /// starts, progress), so the daemon's status and PlaybackChanged signal follow it.
    func changes() async -> AsyncStream<PlaybackSnapshot>
    /// The part of the playback side that needs an orderly shutdown in the daemon's service
    /// group (after the daemon, so a song's output is closed complete), if any.
    var lifecycleService: (any Service)? { get }
}

extension DaemonPlayback {
    /// A playback side that keeps no budget per client plays the file alike.
    public func play(_ request: PlayRequest) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try await play(file: request.file, displayName: request.displayName, queue: request.queue)
    }
}

/// Why songs cannot play yet, as the daemon derived it (`NotReadyReason`): the sentence, and
/// whether waiting can succeed (a speaker connecting) or not (the user disconnected it).
public struct PlaybackWait: Sendable, Equatable {
    public var message: String
    public var waitingCanSucceed: Bool

    public init(message: String, waitingCanSucceed: Bool) {
        self.message = message
        self.waitingCanSucceed = waitingCanSucceed
    }
}
