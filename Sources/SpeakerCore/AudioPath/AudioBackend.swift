import BlueZ
import DBus
import Playback

/// One way audio reaches a speaker, as `audio_output` names it: the seam every backend plugs into.
///
/// A backend does three things, and only these:
/// - follows the **path** to a speaker: a stream of states, each "not ready" a reason a person
///   can act on, and "ready" carrying the ``AudioRoute`` (the device songs open);
/// - opens the **output** one song plays to on a route it reported ready;
/// - gives the **volume** of the speaker's device on such a route.
///
/// The daemon follows the path, turns its problems into readiness reasons and hands the ready
/// route to the player with every change; the player opens outputs on it through the same backend.
/// Nothing travels beside the stream: what a song needs is in the route.
///
/// One file per backend: ``BlueALSABackend``, ``SoundServerBackend`` (PulseAudio and PipeWire),
/// ``ALSABackend``, ``FileBackend``, ``NullBackend`` and ``AutomaticBackend`` (`auto`, which
/// chooses between the first two). `AudioOutputSetting.backend(soundServers:clock:)` makes the one
/// the setting names; docs/ARCHITECTURE.md walks through adding one.
public protocol AudioBackend: Sendable {
    /// The path to `speaker` (nil: none chosen yet): its state now, then each change, until the
    /// stream is dropped. `bus` is the daemon's system bus (nil until it has one), for a backend
    /// that asks a D-Bus service; the others ignore it.
    func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport>
    /// The output one song plays to on `route`, a route this backend reported ready.
    func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput
    /// The volume of the speaker's device on `route`. Throws `notAvailable` for an output with no
    /// hardware volume (a file, ALSA device, the null output).
    func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume
    /// Whether a song paused by its speaker's loss needs its output opened again when the speaker
    /// is back: true for every output bound to the speaker's own device, whose device died with the
    /// link even where it does not say so (a sound server moves the stream onto its default sink;
    /// an ALSA handle on BlueALSA's old PCM takes audio while paused and fails mid-song), false
    /// for a file or the null output (opening a WAV file again would start it anew).
    var outputGoesWithSpeaker: Bool { get }
}

/// One state of the path to a speaker, with what `status` shows beside it.
public struct AudioPathReport: Equatable, Sendable {
    public var state: AudioPathState
    /// Under `audio_output = auto`, what was chosen for the speaker and why (nil otherwise, or
    /// while nothing reaches the speaker).
    public var automaticChoice: AutomaticOutput?
    /// What the backend did that the user should know even once the path is ready (a headset
    /// card switched to A2DP), for `status`'s warnings.
    public var warnings: [String]

    public init(_ state: AudioPathState, automaticChoice: AutomaticOutput? = nil, warnings: [String] = []) {
        self.state = state
        self.automaticChoice = automaticChoice
        self.warnings = warnings
    }

    /// A stream of this one report: the path of a backend with no events of its own (ALSA, a
    /// file, the null output), looked at again on each new stream.
    var only: AsyncStream<AudioPathReport> {
        AsyncStream { continuation in
            continuation.yield(self)
            continuation.finish()
        }
    }
}

/// Where a ready path goes: the device songs open and whose volume the speaker has.
///
/// A value the path's `ready` state carries, so the player gets everything a song needs with
/// the route and reads nothing else of the audio path. Only the backend that found it knows how
/// to open it (`backend`); `auto` hands it back to that one.
public struct AudioRoute: Equatable, Sendable, CustomStringConvertible {
    /// The backend that found the route.
    let backend: ObjectIdentifier
    /// The device: a BlueALSA PCM's object path, a sink's name, an ALSA device, a file's path
    /// (nil: the backend's default, as a sound server's with no speaker chosen yet).
    public let device: String?
    /// The sound server the device is on (nil: libpulse's own choice, or not a sound server).
    public let server: String?
    /// The speaker the device belongs to (nil: an output that is not a speaker's).
    public let speaker: BluetoothAddress?
    /// What it is, in words: "BlueALSA PCM /org/bluealsa/…", "PulseAudio sink bluez_sink.…"
    /// (logs, and `status`'s `audioPath`).
    public let description: String
    /// The device's own sample rate, as the backend found it (a sink's sample spec, a PCM's
    /// `Sampling`): songs render at it (`AudioOutput.deviceSampleRate`). Nil when unknown.
    public let sampleRate: Int?

    public init(by backend: any AudioBackend.Type, device: String?, server: String? = nil,
                speaker: BluetoothAddress? = nil, sampleRate: Int? = nil, description: String) {
        self.backend = ObjectIdentifier(backend)
        self.device = device
        self.server = server
        self.speaker = speaker
        self.sampleRate = sampleRate
        self.description = description
    }

    /// Whether `backend` found this route (and so can open it).
    public func isFound(by backend: any AudioBackend.Type) -> Bool {
        self.backend == ObjectIdentifier(backend)
    }

    /// The error for a route handed to a backend that did not find it.
    func misrouted(to backend: String) -> AudioRouteError {
        AudioRouteError(reason: "\(description) is not an output of \(backend)")
    }
}

/// Why no output could be opened on a route; `reason` is one line.
public struct AudioRouteError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) { self.reason = reason }

    public var description: String { reason }
}
