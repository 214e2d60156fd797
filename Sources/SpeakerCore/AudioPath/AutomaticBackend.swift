import BlueZ
import DBus
import Playback

/// `audio_output = auto`, the normal case on a speaker box: BlueALSA while `org.bluealsa` is on
/// the system bus; otherwise a PulseAudio or PipeWire server if one answers where speakerd looks;
/// otherwise no path, said with the fix — never ALSA's `default`, which on a Pi is HDMI or the
/// headphone jack, not the speaker.
///
/// BlueALSA's own service events drive the choice, so BlueALSA starting after speakerd (or
/// stopping) changes it without a restart. Each report carries the choice and why (`status`);
/// each ready route goes back to the backend that found it for the song's output and the volume.
public struct AutomaticBackend: AudioBackend {
    /// BlueALSA, when there is a system bus to find it on (nil: the sound server at once).
    let blueALSA: BlueALSABackend?
    /// The fallback, on the server found where `location` looks.
    let soundServer: SoundServerBackend

    public init(blueALSA: BlueALSABackend?, soundServer: SoundServerBackend = SoundServerBackend()) {
        self.blueALSA = blueALSA
        self.soundServer = soundServer
    }

    static let blueALSAChosen = AutomaticOutput(backend: .blueALSA, why: "org.bluealsa is on the system bus")

    public func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        blueALSA?.use(bus)
        guard let speaker else { return AudioPathReport(.unknown).only }
        return paths(to: speaker, over: bus, environment: ProcessEnvironment.current)
    }

    /// The path to `speaker`, a sound server looked for as `environment` says (`PULSE_SERVER`…).
    func paths(to speaker: TargetSpeaker, over bus: DBusConnection?, environment: [String: String]) -> AsyncStream<AudioPathReport> {
        let (blueALSA, soundServer) = (self.blueALSA, self.soundServer)
        let blueALSAPaths = blueALSA?.paths(to: speaker, over: bus)
        return AsyncStream { continuation in
            let task = Task {
                var fallback: Task<Void, Never>?
                /// BlueALSA is not running: a sound server if one answers, else no path at all.
                func fallBack() {
                    guard fallback == nil else { return }
                    switch soundServer.location.find(environment: environment) {
                    case .reachable(let candidate):
                        let choice = AutomaticOutput(backend: .soundServer(candidate.server),
                                                     why: "BlueALSA is not on the system bus; a sound server answers at \(candidate.server) (\(candidate.origin))")
                        let reports = soundServer.follow(speaker, on: candidate.server)
                        fallback = Task {
                            for await var report in reports {
                                report.automaticChoice = choice
                                continuation.yield(report)
                            }
                        }
                    case .unreachable(let problem):
                        // Nothing reaches the speaker: say so, never ALSA's default (the box's own output).
                        fallback = Task {}
                        continuation.yield(AudioPathReport(.notReady(.noBluetoothAudioPath("BlueALSA is not on the system bus and \(problem)"))))
                    }
                }
                if let blueALSAPaths {
                    for await var report in blueALSAPaths {
                        guard report.state != BlueALSABackend.notRunning else { fallBack(); continue }
                        fallback?.cancel()
                        fallback = nil
                        report.automaticChoice = Self.blueALSAChosen
                        continuation.yield(report)
                    }
                } else {
                    fallBack()
                }
                // BlueALSA's events ended (or there is no system bus to watch): the fallback, if
                // any, goes on until the stream is dropped.
                await withTaskCancellationHandler {
                    await fallback?.value
                } onCancel: { [fallback] in fallback?.cancel() }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func output(on route: AudioRoute) throws(AudioRouteError) -> any AudioOutput {
        if route.isFound(by: BlueALSABackend.self) {
            guard let blueALSA else { throw AudioRouteError(reason: "BlueALSA was chosen but speakerd has no system bus to reach it") }
            return try blueALSA.output(on: route)
        }
        return try soundServer.output(on: route)
    }

    public func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume {
        if route.isFound(by: BlueALSABackend.self), let blueALSA { return try blueALSA.volume(on: route) }
        return try soundServer.volume(on: route)
    }

    /// Either backend's output is the speaker's own device.
    public var outputGoesWithSpeaker: Bool { true }
}

/// What `audio_output = auto` chose, and why (for `status`).
public struct AutomaticOutput: Sendable, Equatable {
    public enum Backend: Sendable, Equatable {
        case blueALSA
        /// A PulseAudio or PipeWire server, by its server string.
        case soundServer(String)
    }

    public var backend: Backend
    public var why: String

    /// One line for `status`: "BlueALSA (org.bluealsa is on the system bus)".
    public var description: String {
        switch backend {
        case .blueALSA: "BlueALSA (\(why))"
        case .soundServer: "PulseAudio/PipeWire (\(why))"
        }
    }
}
