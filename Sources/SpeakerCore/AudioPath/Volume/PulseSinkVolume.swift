import PulseAudio

/// The volume of the speaker's own sink on a PulseAudio server (or PipeWire's pipewire-pulse),
/// through libpulse. The server passes it on to the speaker as AVRCP absolute volume where the
/// speaker supports it (PulseAudio's bluez5 module, PipeWire's bluez5 monitor).
///
/// Each read or write is one short connection: a volume change is rare, and a connection kept
/// open for it would be one more thing to keep alive across sound-server restarts, which the
/// sink watcher already does for readiness.
public struct PulseSinkVolume: SpeakerVolume {
    /// The sink's name, as the sink watcher found it by its properties (never guessed).
    public let sink: String
    /// A PulseAudio server string; nil lets libpulse find the server as every client does.
    public let server: String?

    public init(sink: String, server: String?) {
        self.sink = sink
        self.server = server
    }

    public var deviceDescription: String { "PulseAudio sink \(sink)" }

    public func percent() async throws(SpeakerVolumeError) -> Int { try await run(setting: nil) }

    public func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int { try await run(setting: percent) }

    private func run(setting target: Int?) async throws(SpeakerVolumeError) -> Int {
        switch await PulseRequests.sinkVolume(server: server, sink: sink, setting: target) {
        case .success(let percent): return percent
        case .failure(let failure): throw .failed(device: deviceDescription, reason: failure.reason)
        }
    }
}
