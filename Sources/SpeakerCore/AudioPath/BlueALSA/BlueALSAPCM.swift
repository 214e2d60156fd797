import BlueZ
/// One of BlueALSA's PCMs, as its `org.bluealsa.PCM1` object describes it.
///
/// BlueALSA (bluez-alsa) publishes a PCM object per Bluetooth audio stream it can carry, under
/// `/org/bluealsa/hciN/dev_XX_XX_XX_XX_XX_XX/<type>/<mode>`. For playing to a speaker we need the
/// one whose `Transport` is `A2DP-source` (we are the A2DP source) and whose `Mode` is `sink`
/// (the PCM takes our audio). It appears only once the A2DP transport is set up, which is later
/// than BlueZ's `Connected` turning true: that gap is why `Connected` alone is not "ready".
public struct BlueALSAPCM: Sendable, Equatable, CustomStringConvertible {
    /// D-Bus property names of `org.bluealsa.PCM1` that we read (doc/org.bluealsa.PCM1.7.rst).
    public enum Property {
        public static let device = "Device"
        public static let transport = "Transport"
        public static let mode = "Mode"
        public static let running = "Running"
        /// The PCM's delay in tenths of a millisecond (read while a song plays, not listed).
        public static let delay = "Delay"
        /// The PCM's sample rate, a `u`: `Sampling` in BlueALSA 4.0 (Debian 12), `Rate` from 4.1.
        public static let sampling = "Sampling"
        public static let rate = "Rate"
    }

    public static let interface = "org.bluealsa.PCM1"
    /// `Transport` of a PCM that sends audio to a speaker.
    public static let a2dpSourceTransport = "A2DP-source"
    /// `Mode` of a PCM that an application writes audio into.
    public static let sinkMode = "sink"

    /// The PCM's object path.
    public var path: String
    /// The BlueZ device it belongs to (`/org/bluez/hci0/dev_11_22_33_AA_BB_CC`).
    public var device: String
    public var transport: String
    public var mode: String
    /// Whether the transport is acquired right now (newer BlueALSA only; nil when absent).
    public var running: Bool?
    /// The PCM's sample rate: the A2DP link's (44.1 or 48 kHz). ALSA's plug layer in front of
    /// BlueALSA's plugin resamples a stream at another rate, in speakerd's own process.
    public var sampleRate: Int?

    public init(path: String, device: String, transport: String, mode: String, running: Bool? = nil, sampleRate: Int? = nil) {
        self.path = path
        self.device = device
        self.transport = transport
        self.mode = mode
        self.running = running
        self.sampleRate = sampleRate
    }

    /// The speaker's address, read from the device path's last component; nil if it has none.
    public var address: BluetoothAddress? {
        guard let last = device.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
        let pairs = last.dropFirst(4).replacingOccurrences(of: "_" as Character, with: ":")
        return try? BluetoothAddress(pairs)
    }

    /// Whether this is the PCM we play a speaker's music through (A2DP, towards the speaker).
    public var isA2DPPlayback: Bool {
        transport == Self.a2dpSourceTransport && mode == Self.sinkMode
    }

    /// The ALSA PCM name that plays to `address` through BlueALSA.
    public static func alsaDevice(for address: BluetoothAddress) -> String {
        "bluealsa:DEV=\(address.description),PROFILE=a2dp"
    }

    public var description: String { "\(path) (\(transport) \(mode), device \(device))" }
}

extension Substring {
    fileprivate func replacingOccurrences(of target: Character, with replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
