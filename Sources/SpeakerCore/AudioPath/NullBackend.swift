import DBus
import Playback

/// `audio_output = null`: audio is discarded, while playback's timing still runs (tests, and a
/// box that only wants the daemon's status). Always ready, to any speaker or none.
public struct NullBackend: AudioBackend {
    /// Paces the null output in real time.
    let clock: any Clock<Duration>

    public init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    static let route = AudioRoute(by: NullBackend.self, device: nil, description: "the null output (audio is discarded)")

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        AudioPathReport(.ready(Self.route)).only
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        guard route.isFound(by: Self.self) else { throw route.misrouted(to: "the null output") }
        return NullOutput(pacing: .realTime(clock))
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        throw .notAvailable(output: "the null output")
    }

    public var outputGoesWithSpeaker: Bool { false }
}
