import AsyncSignals
import AudioPath
import Playback
import SpeakerdAPI
/// Everything speakerd is told by its operator: the config file, then environment, then flags;
/// plus how it was started (by bus activation or not).
///
/// A plain value so each start-up operation can be handed exactly what it needs and tests can
/// build one in a line. `DaemonOptions.resolve` is the one place that merges the sources.
public struct DaemonConfiguration: Equatable, Sendable {
    /// Where the config file is looked for when `--config` is not given.
    public static let defaultConfigPath = "/etc/speakerd/speakerd.conf"
    /// Where state lives when neither `--state-dir` nor systemd's `STATE_DIRECTORY` says.
    public static let defaultStateDirectory = "/var/lib/speakerd"
    /// TimGM6mb (Debian's `timgm6mb-soundfont`, which scripts/setup installs): 6 MB and General
    /// MIDI complete. Not `default-GM.sf2`: that is an alternatives link, which points at the
    /// 148 MB FluidR3_GM (about 190 MiB resident) as soon as fluid-soundfont-gm is installed.
    public static let defaultSoundfont = "/usr/share/sounds/sf2/TimGM6mb.sf2"

    /// The HCI adapter to use (`hci0`); nil means the first one BlueZ reports.
    public var adapter: String?
    /// Pick the best scan candidate without waiting for the user.
    public var autoPick: Bool
    /// How long a play request waits for readiness before failing.
    public var playTimeout: Duration
    /// Where audio goes.
    public var audioOutput: AudioOutputSetting
    /// The soundfont preloaded after start-up.
    public var soundfont: String
    /// What a song does when the speaker drops.
    public var onSpeakerLost: SpeakerLostBehaviour
    /// The longest pause between reconnect attempts.
    public var reconnectMax: Duration
    /// How long one scan-and-pick discovery runs.
    public var scanDuration: Duration
    /// Where `state.json` lives.
    public var stateDirectory: String
    /// The bus speakerd serves on and reaches BlueZ through.
    public var bus: BusSelection
    /// The D-Bus daemon started this process for a request (`BusActivation`): start-up runs the
    /// "launched by request" graph. Read from the environment, never from the file.
    public var launchedByRequest: Bool
    /// systemd started this process (`INVOCATION_ID` is set), perhaps for a D-Bus request through
    /// `SystemdService=`, which passes no `DBUS_STARTER_*`: the bus step then looks for calls
    /// already waiting for speakerd's name. Read from the environment, never from the file.
    public var startedBySystemd: Bool
    /// Bounds on pending long requests (`max_requests_per_client`, `max_requests_total`).
    public var requestLimits: SpeakerdRequestLimits
    /// How long a connected speaker may be without an audio device (no BlueALSA PCM, no sink)
    /// before speakerd asks BlueZ, once, to open its A2DP profile (`ConnectProfile`).
    /// (`audio_device_grace_seconds`.)
    public var audioDeviceGrace: Duration = .seconds(4)
    /// Where a PulseAudio/PipeWire server may be, beyond what the environment says
    /// (`pulse_server`, `sound_server_user`): a system service has no session to find one by.
    public var soundServers = SoundServerLocation()
    /// Silence before a song's first note each time its stream opens (`pre_roll_ms`): a
    /// Bluetooth speaker (and a sound server waking a suspended sink) clips the start of a new
    /// stream, which would otherwise be the first note. Zero disables it.
    public var preRoll: Duration = .milliseconds(150)
    /// Play an inaudible signal to the ready speaker while nothing plays (`keep_alive`), so that
    /// it does not power itself off after some idle minutes (`KeepAliveSignal`).
    public var keepAlive = false
    /// What it plays: the inaudible bursts (`yes`), digital silence (`silence`) or a low tone
    /// (`tone`) for speakers that sleep on both.
    public var keepAliveSound = KeepAliveSound.bursts
    /// The volume, in percent, a speaker with no remembered volume (one never seen before) gets
    /// when its audio device first appears: many speakers wake at full volume, which is a shock
    /// with a song already queued.
    public var firstVolume: Int = 40
    /// The bytes songs being read from clients may hold, in all and per client connection
    /// (`read_budget_mib`, `read_budget_per_client_mib`); past them a `play` is refused as busy.
    public var readBudget = SongReadLimits.default
    /// How many songs the play queue holds and how much memory they take (`max_queued_songs`,
    /// `max_queue_mib`); past them a `play --queue` is refused as busy.
    public var queueLimits = PlayQueueLimits.default

    public init(
        adapter: String? = nil,
        autoPick: Bool = false,
        playTimeout: Duration = .seconds(30),
        audioOutput: AudioOutputSetting = .automatic,
        soundfont: String = DaemonConfiguration.defaultSoundfont,
        onSpeakerLost: SpeakerLostBehaviour = .pause,
        reconnectMax: Duration = .seconds(60),
        scanDuration: Duration = .seconds(10),
        stateDirectory: String = DaemonConfiguration.defaultStateDirectory,
        bus: BusSelection = .system,
        launchedByRequest: Bool = false,
        startedBySystemd: Bool = false,
        requestLimits: SpeakerdRequestLimits = .default
    ) {
        self.adapter = adapter
        self.autoPick = autoPick
        self.playTimeout = playTimeout
        self.audioOutput = audioOutput
        self.soundfont = soundfont
        self.onSpeakerLost = onSpeakerLost
        self.reconnectMax = reconnectMax
        self.scanDuration = scanDuration
        self.stateDirectory = stateDirectory
        self.bus = bus
        self.launchedByRequest = launchedByRequest
        self.startedBySystemd = startedBySystemd
        self.requestLimits = requestLimits
    }

    /// The built-in defaults, used for every key the config file leaves out.
    public static let defaults = DaemonConfiguration()
}
