import BlueZ
import Playback
/// The speaker as an audio output: BlueALSA's ALSA PCM for one address, ready only once
/// BlueALSA has the speaker's A2DP PCM.
///
/// This is the output the daemon builds per song for `audio_output = auto`; `waitUntilReady`
/// is the engine's last check before it opens the device, so a song never starts into a PCM
/// that does not exist (the readiness gate has usually waited for it already, then this returns
/// at once).
public struct BlueALSAOutput: AudioOutput {
    public let address: BluetoothAddress
    public let audioPath: BlueALSAAudioPath
    /// How long `waitUntilReady` waits for the PCM (the gate in front normally makes it instant).
    public let readyTimeout: Duration

    public init(address: BluetoothAddress, audioPath: BlueALSAAudioPath, readyTimeout: Duration = .seconds(10)) {
        self.address = address
        self.audioPath = audioPath
        self.readyTimeout = readyTimeout
    }

    /// `alsa:bluealsa:DEV=…,PROFILE=a2dp`, the device this output opens.
    public var description: String { "alsa:\(audioPath.alsaDevice(for: address))" }

    public func waitUntilReady() async throws {
        _ = try await audioPath.waitUntilReady(for: address, timeout: readyTimeout)
    }

    public func play(_ source: PlaybackSource) async throws {
        try await DeviceOutput(.alsa(device: audioPath.alsaDevice(for: address))).play(source)
    }
}
