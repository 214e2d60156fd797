import AsyncSignals
import Glibc

/// A real-time sound device: ALSA (any PCM name, BlueALSA's `bluealsa:DEV=…,PROFILE=a2dp`
/// included) or a server's default sink through one of FluidSynth's audio drivers, and a
/// speaker's sink on a PulseAudio/PipeWire server through speakerd's own stream
/// (`PulseStreamDevice`), which the server ends rather than moves to its default sink.
///
/// The device's thread pulls audio from the source; this task only waits for the song to end,
/// and watches that the device keeps pulling. FluidSynth's drivers end their thread on a write
/// error (the device went away, the PulseAudio server stopped) without telling anyone, and a
/// stream the server ended asks for nothing more, so without the watchdog a song would stay
/// "playing" in silence forever. When the song ends, is stopped, or the task is cancelled (the
/// output is being replaced), the device is closed (a driver's deletion joins its thread).
public struct DeviceOutput: AudioOutput {
    public enum Backend: Sendable, Equatable {
        case alsa(device: String)
        /// `server` is a PulseAudio server string (`unix:/run/user/1000/pulse/native`); nil lets
        /// libpulse find the server as every client does (`PULSE_SERVER`, client.conf, the user's
        /// runtime directory). `sink` is where the stream goes.
        case pulseAudio(server: String?, sink: PulseSink = .serverDefault)
    }

    /// The sink a PulseAudio/PipeWire stream goes to.
    public enum PulseSink: Sendable, Equatable {
        /// The server's default sink, for an output a user named without a sink
        /// (`audio_output = pulseaudio`).
        case serverDefault
        /// The speaker's own sink, as the audio path found it; nil while it is gone. A speaker's
        /// song is then refused rather than opened on the default sink, which is the box's own
        /// output.
        case speaker(String?)
    }

    /// How long a device that asks for audio every few milliseconds may ask for nothing before
    /// the song fails: long enough for a loaded machine's scheduling hiccups, short enough that a
    /// listener learns of a dead device in seconds.
    public static let defaultStallLimit: Duration = .seconds(3)

    /// Frames per request to a sound server, and requests buffered: FluidSynth's default (16
    /// periods of 64 frames, 23 ms) underruns as soon as the machine is busy; a sound server adds
    /// its own scheduling, so 16 of 512 (~186 ms at 44.1 kHz) give it room to ride that out.
    /// With 8 (~93 ms), real PipeWire starved speakerd's stream 16-17 times in a song resumed on a
    /// Bluetooth sink that came back (the speaker switched off and on, bluetoothd restarted; in
    /// the real-Bluetooth guest, half of such songs), each a gap the speaker played; with 16, none
    /// in 14 such songs over four guest boots. The cost is that much more latency, which the
    /// status shows and the heard position subtracts; a speaker that drops loses that much more,
    /// which a resume plays again (`Player.goBack`).
    static let periodFrames = 512
    static let periods = 16
    /// What speakerd's own stream to a sink may grow to after underflows (each doubles it): 64
    /// periods, about 0.7 s. A machine busy enough to starve the stream once tends to again (in
    /// the real-Bluetooth guest on a loaded host, dozens of gaps a song), and a gap heard is worse
    /// than latency that the status and the heard position account for.
    static let maxPeriods = 64

    public let backend: Backend
    public let stallLimit: Duration
    /// The device's own rate, as whoever found the device learnt it (the sink's sample spec);
    /// songs render at it. Nil: the SoundFont's rate.
    public let deviceSampleRate: Int?
    private let clock: any Clock<Duration>
    /// Starts the device pulling from the source: FluidSynth's driver or speakerd's own stream in
    /// production; tests pass a device they drive by hand. Dropping the returned device closes it.
    private let openDevice: @Sendable (Backend, PlaybackSource) async throws(AudioOutputError) -> any AudioDevice

    /// - Parameters:
    ///   - clock: times the watchdog (a `TestClock` in tests).
    ///   - stallLimit: how long the device may go without asking for audio before the song fails.
    ///   - sampleRate: the device's own rate, if known (`deviceSampleRate`).
    public init(_ backend: Backend, sampleRate: Int? = nil, clock: any Clock<Duration> = ContinuousClock(),
                stallLimit: Duration = defaultStallLimit) {
        self.init(backend, sampleRate: sampleRate, clock: clock, stallLimit: stallLimit, openDevice: Self.openDevice)
    }

    init(_ backend: Backend, sampleRate: Int? = nil, clock: any Clock<Duration>, stallLimit: Duration,
         openDevice: @escaping @Sendable (Backend, PlaybackSource) async throws(AudioOutputError) -> any AudioDevice) {
        self.backend = backend
        self.deviceSampleRate = sampleRate
        self.clock = clock
        self.stallLimit = stallLimit
        self.openDevice = openDevice
    }

    public var description: String { backend.description }

    public func play(_ source: PlaybackSource) async throws {
        let pullsBefore = source.devicePulls
        FluidSynthLog.clearLastError()
        let device: OpenDevice
        do {
            device = OpenDevice(try await openDevice(backend, source))
        } catch {
            source.stop()
            throw error
        }
        // Returns when the song ends or this task is cancelled; cancelling only detaches the
        // device (the engine replacing its output), it does not end the song.
        let stalled = await DeviceWatchdog.watch(source, clock: clock, stallLimit: stallLimit, pullsBefore: pullsBefore)
        guard stalled else {
            device.close()
            return
        }
        let reason = device.failureReason()
        // The song is not ended here: a paused song outlives its device (a speaker that drops
        // takes its PCM with it), and a session may hold a playing one for a new stream; the
        // session ends it otherwise.
        // A driver stuck in a blocking write (a frozen sound server) would make its deletion
        // wait forever: let a thread of its own wait for that instead of the engine.
        DetachedThread.start(name: "audio-dev-close") { device.close() }
        throw AudioOutputError.deviceStopped(output: description, after: stallLimit, reason: reason)
    }

    /// The device for `backend`, already pulling from `source`: speakerd's own stream for a
    /// speaker's sink, FluidSynth's driver otherwise.
    private static func openDevice(_ backend: Backend, _ source: PlaybackSource) async throws(AudioOutputError) -> any AudioDevice {
        switch backend {
        case .pulseAudio(let server, .speaker(let sink?)):
            return try await PulseStreamDevice(server: server, sink: sink, source: source, output: backend.description)
        case .pulseAudio(_, .speaker(nil)):
            throw .deviceUnavailable(output: backend.description, reason:
                "the speaker's sink is gone from the sound server; speakerd does not play a speaker's song to the default sink (the box's own output)")
        case .alsa, .pulseAudio(_, .serverDefault):
            return try openFluidSynthDriver(backend, source)
        }
    }

    /// FluidSynth's driver for an ALSA device or a server's default sink, already pulling from `source`.
    private static func openFluidSynthDriver(_ backend: Backend, _ source: PlaybackSource) throws(AudioOutputError) -> any AudioDevice {
        let settings: SynthSettings
        do { settings = try SynthSettings(sampleRate: source.sampleRate) } catch {
            throw .deviceUnavailable(output: backend.description, reason: error.description)
        }
        switch backend {
        case let .alsa(device):
            settings.set("audio.driver", "alsa")
            settings.set("audio.alsa.device", device)
        case let .pulseAudio(server, _):
            // The server's default sink: a speaker's sink never comes here (`openDevice`).
            settings.set("audio.driver", "pulseaudio")
            settings.set("audio.pulseaudio.media-role", "music")
            settings.set("audio.period-size", periodFrames)
            settings.set("audio.periods", periods)
            if let server { settings.set("audio.pulseaudio.server", server) }
        }
        // What the driver keeps queued is what the listener is behind by, as far as FluidSynth
        // tells (ALSA's own delay is not exposed by its driver; BlueALSA's output adds its PCM's
        // `Delay`, the codec and the link, through `reportLinkDelay`): the heard position
        // subtracts it.
        if let period = settings.int("audio.period-size"), let periods = settings.int("audio.periods") {
            source.reportDeviceLatency(frames: period * periods)
        }
        guard let driver = AudioDriver(settings: settings, source: source) else {
            var reason = FluidSynthLog.takeLastError()
            if case .alsa = backend, let alsa = FluidSynthLog.takeALSAError() {
                // ALSA's own words, in the one line, instead of its raw lines on stderr.
                reason = (reason.map { "\($0): " } ?? "") + "ALSA says: \(alsa)"
            }
            if case .pulseAudio = backend {
                // libpulse only says "Connection refused": say what is missing.
                reason = (reason.map { "\($0); " } ?? "") + "is a PulseAudio server running for this user (PULSE_SERVER names another)?"
            }
            throw .deviceUnavailable(output: backend.description, reason: reason)
        }
        return driver
    }
}

extension DeviceOutput.Backend: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .alsa(device): "alsa:\(device)"
        case let .pulseAudio(server, sink):
            "pulseaudio" + (server.map { ":\($0)" } ?? "") + sink.description
        }
    }
}

extension DeviceOutput.PulseSink: CustomStringConvertible {
    /// What follows the server in an output's description: " sink NAME", or nothing for the default.
    public var description: String {
        switch self {
        case .serverDefault: ""
        case .speaker(let name?): " sink \(name)"
        case .speaker(nil): " sink (the speaker's, gone)"
        }
    }
}

/// The one owner of an open device, so that whoever calls `close()` is where the device is
/// deleted (for a stalled one, a thread of its own).
private final class OpenDevice: @unchecked Sendable {
    private var device: (any AudioDevice)?

    init(_ device: any AudioDevice) { self.device = device }

    func failureReason() -> String? { device?.failureReason() }

    /// Drops the device (deleting a FluidSynth driver joins its thread). Called once, by one thread.
    func close() { device = nil }
}

/// A device pulling audio from a song (FluidSynth's driver, or a test's hand-driven one);
/// dropping it closes it.
protocol AudioDevice: AnyObject {
    /// Why the device stopped asking for audio, when its back-end said; asked once it has stopped.
    func failureReason() -> String?
}
