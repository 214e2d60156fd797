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
    /// How often the PCM's `Delay` is read again while a song plays: BlueALSA moves it as its own
    /// buffer fills (17-36 ms over one song against real bluetoothd) and when the transport or
    /// codec changes, and one property read every few seconds costs nothing.
    static let delayInterval: Duration = .seconds(3)
    /// The ALSA device the song plays into: FluidSynth's ALSA driver in production, a test's
    /// hand-driven output otherwise.
    private let device: @Sendable (String) -> any AudioOutput
    /// The PCM's rate, as the path found it (`BlueALSAPCM.sampleRate`): songs render at it, so
    /// ALSA's plug layer in front of BlueALSA's plugin has nothing to resample.
    public let deviceSampleRate: Int?

    public init(address: BluetoothAddress, audioPath: BlueALSAAudioPath, readyTimeout: Duration = .seconds(10), sampleRate: Int? = nil) {
        self.init(address: address, audioPath: audioPath, readyTimeout: readyTimeout, sampleRate: sampleRate) { DeviceOutput(.alsa(device: $0)) }
    }

    init(address: BluetoothAddress, audioPath: BlueALSAAudioPath, readyTimeout: Duration = .seconds(10), sampleRate: Int? = nil,
         device: @escaping @Sendable (String) -> any AudioOutput) {
        self.address = address
        self.audioPath = audioPath
        self.readyTimeout = readyTimeout
        self.deviceSampleRate = sampleRate
        self.device = device
    }

    /// `alsa:bluealsa:DEV=…,PROFILE=a2dp`, the device this output opens.
    public var description: String { "alsa:\(audioPath.alsaDevice(for: address))" }

    public func waitUntilReady() async throws {
        _ = try await audioPath.waitUntilReady(for: address, timeout: readyTimeout)
    }

    /// Plays into BlueALSA's ALSA PCM while following the PCM's `Delay` into the song's latency:
    /// FluidSynth's ALSA driver reports only its own buffer, and the codec and the Bluetooth
    /// transport behind it are what BlueALSA adds (tens of milliseconds, more with a speaker's
    /// delay report), so without it the heard position would run ahead of the speaker.
    public func play(_ source: PlaybackSource) async throws {
        let delays = Task { [audioPath, address, readyTimeout, clock = audioPath.clock] in
            guard let pcm = try? await audioPath.waitUntilReady(for: address, timeout: readyTimeout) else { return }
            while !Task.isCancelled {
                let delay = await audioPath.source.delay(ofPCM: pcm.path)
                // A song's next output reports its own: a read that outlived this one says nothing.
                guard !Task.isCancelled else { return }
                source.reportLinkDelay(delay)
                try? await clock.sleep(for: Self.delayInterval)
            }
        }
        defer { delays.cancel() }
        try await device(audioPath.alsaDevice(for: address)).play(source)
    }
}
