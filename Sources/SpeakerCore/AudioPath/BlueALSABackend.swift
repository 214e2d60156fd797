import BlueZ
import DBus
import Playback

/// BlueALSA: the speaker's A2DP playback PCM on `org.bluealsa`, played through its ALSA plugin.
/// `auto` uses it while BlueALSA is on the system bus.
///
/// Ready once the PCM for *that* speaker exists; BlueALSA's own PCM and service events move the
/// path, so "BlueALSA is not running" (``notRunning``) and "no PCM for it yet" are told apart.
public struct BlueALSABackend: AudioBackend {
    /// BlueALSA's PCMs: over the daemon's bus (``live(clock:)``), or a test's scripted source.
    public let source: any BlueALSAPCMSource
    /// The source's bus, when it is the daemon's: handed over with each speaker followed, since
    /// the backend is built before start-up connects the bus.
    private let bus: BusPCMSource?
    /// Waits for the PCM before a song opens it.
    let audioPath: BlueALSAAudioPath

    /// BlueALSA over the daemon's system bus (given with each `paths(to:over:)`), songs' waits
    /// timed by `clock`.
    public static func live(clock: any Clock<Duration> = ContinuousClock()) -> BlueALSABackend {
        let bus = BusPCMSource()
        return BlueALSABackend(source: bus, bus: bus, clock: clock)
    }

    /// BlueALSA as `source` lists it (a test's mock); the bus handed to `paths` is ignored.
    public init(source: any BlueALSAPCMSource, clock: any Clock<Duration> = ContinuousClock()) {
        self.init(source: source, bus: nil, clock: clock)
    }

    private init(source: any BlueALSAPCMSource, bus: BusPCMSource?, clock: any Clock<Duration>) {
        self.source = source
        self.bus = bus
        self.audioPath = BlueALSAAudioPath(source: source, clock: clock)
    }

    /// Asks BlueALSA over `bus` from now on (a source of the daemon's bus only; a test's source
    /// has its own), so a song's wait for the PCM uses the bus the daemon has now.
    func use(_ bus: DBusConnection?) {
        self.bus?.use(bus)
    }

    /// The path while `org.bluealsa` is not on the system bus (or could not be asked).
    public static let notRunning = AudioPathState.notReady(.noBluetoothAudioPath("BlueALSA is not on the system bus"))

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        use(bus)
        guard let speaker else { return AudioPathReport(.unknown).only }
        let services = source.serviceStates()
        return AsyncStream { continuation in
            let task = Task {
                do {
                    for try await set in services {
                        continuation.yield(AudioPathReport(set.map { Self.state(of: speaker, in: $0) } ?? Self.notRunning))
                    }
                } catch {
                    // The bus failed or was lost: as good as not running, until followed anew.
                    if !Task.isCancelled { continuation.yield(AudioPathReport(Self.notRunning)) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        guard route.isFound(by: Self.self), let speaker = route.speaker else { throw route.misrouted(to: "BlueALSA") }
        return BlueALSAOutput(address: speaker, audioPath: audioPath, sampleRate: route.sampleRate)
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        guard route.isFound(by: Self.self), let pcm = route.device, let volume = source.volume(ofPCM: pcm) else {
            throw .noAudioDevice(speaker: route.speaker?.description ?? "the speaker")
        }
        return volume
    }

    /// BlueALSA's PCM for the speaker is a new one after the link comes back; an ALSA handle on
    /// the old one may take audio while the song is paused, then fail mid-song with "No such
    /// device" (seen against real bluetoothd 5.66 and BlueALSA 4.0).
    public var outputGoesWithSpeaker: Bool { true }

    /// The path given BlueALSA's PCMs: ready once the speaker's A2DP playback PCM exists.
    static func state(of speaker: TargetSpeaker, in set: [BlueALSAPCM]) -> AudioPathState {
        if let pcm = set.first(where: { $0.isA2DPPlayback && $0.address == speaker.address }) {
            return .ready(AudioRoute(by: Self.self, device: pcm.path, speaker: speaker.address, sampleRate: pcm.sampleRate,
                                     description: "BlueALSA PCM \(pcm.path)"))
        }
        return .notReady(.noAudioDevice(speaker.name, "BlueALSA has no A2DP playback PCM for it yet"))
    }
}
