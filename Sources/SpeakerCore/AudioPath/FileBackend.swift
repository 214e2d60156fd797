import DBus
import Glibc
import Playback
import SystemPackage

/// `audio_output = file:PATH`: each song is written to a WAV file (tests, demos, headless
/// renders), paced in real time. Ready while the file's directory is writable.
public struct FileBackend: AudioBackend {
    public let path: String
    /// Paces the file's writing in real time, as a device would take the audio.
    let clock: any Clock<Duration>

    public init(path: String, clock: any Clock<Duration> = ContinuousClock()) {
        self.path = path
        self.clock = clock
    }

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        AudioPathReport(Self.state(of: path)).only
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        guard route.isFound(by: Self.self), let path = route.device else { throw route.misrouted(to: "the WAV file output") }
        return WAVFileOutput(path: path, pacing: .realTime(clock))
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        throw .notAvailable(output: "the WAV file output")
    }

    public var outputGoesWithSpeaker: Bool { false }

    /// A WAV file can be written where its directory is writable ("cannot write /dir/x.wav:
    /// permission denied (directory /dir)" otherwise).
    static func state(of path: String) -> AudioPathState {
        let directory = FilePath(path).removingLastComponent().string
        let checked = directory.isEmpty ? "." : directory
        guard access(checked, W_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            return .notReady(.outputUnusable("cannot write \(path): \(reason.lowercased()) (directory \(checked))"))
        }
        return .ready(AudioRoute(by: Self.self, device: path, description: "WAV file \(path)"))
    }
}
