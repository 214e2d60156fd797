/// The speaker's own volume, on the audio device speakerd plays to: BlueALSA's PCM or the
/// speaker's sink on PulseAudio/PipeWire. Where the speaker takes AVRCP absolute volume the level
/// is the speaker's, not a software gain on our samples (which would waste the speaker's range and
/// add noise at low levels): PipeWire forwards the sink's volume (once the A2DP stream starts: it
/// holds it back while the speaker is idle), and BlueALSA does once speakerd has switched the PCM
/// from software to native volume (``BlueALSAPCMVolume``; Debian runs BlueALSA with software
/// volume). Checked against real BlueZ by the real-Bluetooth scenario `avrcp-volume`.
///
/// One value per device, read and written in percent; each backend maps percent to its own
/// scale (BlueALSA 0…127, PulseAudio's 0…65536 "normal").
public protocol SpeakerVolume: Sendable {
    /// The device's current volume in percent (the loudest channel).
    func percent() async throws(SpeakerVolumeError) -> Int
    /// Sets every channel to `percent` (0…100) and returns what the device reports afterwards.
    func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int
    /// The device, for messages ("PulseAudio sink bluez_sink…", "BlueALSA PCM /org/bluealsa/…").
    var deviceDescription: String { get }
}
