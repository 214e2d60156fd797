import BlueZ
import MIDI
import SystemPackage

/// speakerd's API as one Swift protocol: implemented by the daemon itself (served on D-Bus)
/// and by the D-Bus client `composer-cli` uses, so both sides agree by construction and the
/// CLI can be tested against an in-process daemon.
public protocol SpeakerdControl: Sendable {
    func status() async throws(SpeakerdError) -> StatusReport
    /// The last start-up's timeline.
    func startup() async throws(SpeakerdError) -> StartupReport
    /// Runs one discovery (the configured `scan_seconds`) and lists the audio devices found.
    func scan() async throws(SpeakerdError) -> ScanReport
    /// `scan` for `seconds` (`ScanLength.seconds`) instead of the configured `scan_seconds`:
    /// `composer-cli scan --duration N`.
    func scan(seconds: Int) async throws(SpeakerdError) -> ScanReport
    func speakers() async throws(SpeakerdError) -> SpeakersReport
    /// Connects `address`, or with nil the last known speaker; also lifts a user's disconnect.
    /// A device BlueZ shows to be something else than a speaker (a phone, a keyboard) is refused.
    func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport
    /// `connect`, where `force` connects even a device that does not look like a speaker.
    func connect(_ address: BluetoothAddress?, force: Bool) async throws(SpeakerdError) -> StatusReport
    /// Disconnects and keeps the speaker disconnected until `connect` is asked for.
    func disconnect() async throws(SpeakerdError) -> StatusReport
    /// Removes a known speaker and its BlueZ pairing (the speaker must pair again to come back).
    func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport
    /// `forget`, where `keepPairing` leaves BlueZ's pairing in place (only speakerd forgets it).
    func forget(_ address: BluetoothAddress, keepPairing: Bool) async throws(SpeakerdError) -> SpeakersReport
    /// Plays a file the client opened; the daemon never opens client paths.
    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport
    func stop() async throws(SpeakerdError) -> StatusReport
    func pause() async throws(SpeakerdError) -> StatusReport
    func resume() async throws(SpeakerdError) -> StatusReport
    /// Ends the current song and starts the next queued one (a stop when nothing is queued).
    func skip() async throws(SpeakerdError) -> StatusReport
    /// Empties the queue; the current song plays on.
    func clearQueue() async throws(SpeakerdError) -> StatusReport
    /// A composer's control on the song playing or paused: seek, loop, tempo, transpose, mute,
    /// solo, unmute (`LiveControl`), taking effect at the render loop's next block.
    func adjust(_ control: LiveControlRequest) async throws(SpeakerdError) -> StatusReport
    /// The connected speaker's volume, read from its audio device now.
    func volume() async throws(SpeakerdError) -> VolumeReport
    /// Sets (or steps) the connected speaker's volume and remembers it for that speaker.
    func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport
}

extension SpeakerdControl {
    /// Doubles with no radio scan alike for any length.
    public func scan(seconds: Int) async throws(SpeakerdError) -> ScanReport {
        try await scan()
    }

    /// Doubles that know no devices take every connect alike.
    public func connect(_ address: BluetoothAddress?, force: Bool) async throws(SpeakerdError) -> StatusReport {
        try await connect(address)
    }

    public func forget(_ address: BluetoothAddress, keepPairing: Bool) async throws(SpeakerdError) -> SpeakersReport {
        try await forget(address)
    }

    /// Doubles without a queue have nothing to skip.
    public func skip() async throws(SpeakerdError) -> StatusReport {
        throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "cannot skip: nothing is playing")
    }

    public func clearQueue() async throws(SpeakerdError) -> StatusReport { try await status() }

    /// Doubles without a song have nothing to adjust.
    public func adjust(_ control: LiveControlRequest) async throws(SpeakerdError) -> StatusReport {
        throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "cannot \(control.name): nothing is playing")
    }

    /// Doubles without an audio device have no volume.
    public func volume() async throws(SpeakerdError) -> VolumeReport {
        throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: "no speaker is connected: 'composer-cli connect' first")
    }

    public func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport {
        try await volume()
    }
}

/// A song handed to the daemon: an open file descriptor plus what to call it.
public struct PlayRequest: Sendable {
    /// Opened read-only by the client; the receiver owns (and closes) its copy.
    public var file: FileDescriptor
    /// Shown in status and progress (usually the file's base name).
    public var displayName: String
    /// Append to the queue instead of replacing the current song.
    public var queue: Bool
    /// Who sent it (the D-Bus caller's unique name; empty in-process): the bytes of its songs
    /// being read count against this client's share of the daemon's read budget.
    public var client: String
    /// The composer's controls to play it with (`play --loop 17-24 --tempo 80%`), as written:
    /// the daemon checks them again before it arranges the song. Empty: as written.
    public var arrangement: ArrangementText

    public init(file: FileDescriptor, displayName: String, queue: Bool, client: String = "",
                arrangement: ArrangementText = ArrangementText()) {
        self.file = file
        self.displayName = displayName
        self.queue = queue
        self.client = client
        self.arrangement = arrangement
    }
}

/// Why a request to speakerd failed, as one sentence for the CLI's stderr line.
public enum SpeakerdError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The daemon could not be reached at all (not running, no permission on the bus).
    case unreachable(bus: String, reason: String)
    /// The daemon answered with an error: `name` is the D-Bus error name.
    case rejected(name: String, message: String)
    /// The daemon's reply did not have the expected shape (version mismatch).
    case badReply(String)
    /// A local problem before anything was sent (e.g. the song cannot be opened).
    case local(String)

    public var description: String {
        switch self {
        case let .unreachable(bus, reason): "cannot reach speakerd on the \(bus) bus: \(reason)"
        case let .rejected(_, message): message
        case let .badReply(detail): "speakerd sent an unexpected reply (\(detail)); are composer-cli and speakerd the same version?"
        case let .local(detail): detail
        }
    }
}

/// How long a scan a client may ask for (`ScanFor`, `composer-cli scan --duration`): at least a
/// second, at most five minutes, which is longer than any speaker's pairing mode stays on.
public enum ScanLength {
    public static let seconds = 1...300

    /// Why `seconds` is no scan length, in words; nil when it is one.
    public static func problem(_ seconds: Int) -> String? {
        Self.seconds.contains(seconds) ? nil
            : "a scan lasts \(Self.seconds.lowerBound) to \(Self.seconds.upperBound) seconds, not \(seconds)"
    }
}
