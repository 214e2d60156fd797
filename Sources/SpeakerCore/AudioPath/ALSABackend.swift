import DBus
import Playback

/// `audio_output = alsa:DEVICE`: a PCM the user named, such as
/// `bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp`. Taken as ready (ALSA has no events to follow);
/// a device that cannot be opened says so when a song opens it.
public struct ALSABackend: AudioBackend {
    public let device: String

    public init(device: String) {
        self.device = device
    }

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        AudioPathReport(.ready(AudioRoute(by: Self.self, device: device, description: "ALSA device \(device)"))).only
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        guard route.isFound(by: Self.self), let device = route.device else { throw route.misrouted(to: "ALSA") }
        return DeviceOutput(.alsa(device: device))
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        throw .notAvailable(output: "ALSA device \(device)")
    }

    /// A named device may be the speaker's own (`alsa:bluealsa`), whose PCM is a new one after
    /// the link comes back.
    public var outputGoesWithSpeaker: Bool { true }
}
