import Configuration
import AudioPath
import MIDI
import Playback
/// Where the player gets its output and session from.
///
/// Injected so that the daemon wires BlueALSA (or the `--audio-output` it was given) and tests
/// wire a WAV or null output paced by a `TestClock`. The player builds one session per song:
/// each song then has its own event stream (no event of a replaced song is mistaken for the
/// current one's), and the output is chosen for the speaker connected *now*, not at start-up.
public struct PlaybackComponents: Sendable {
    /// Builds the output one song plays to on the route the daemon last handed over (called once
    /// per song, when it is about to start; nil: no route is ready yet).
    public var makeOutput: @Sendable (AudioRoute?) async throws -> any AudioOutput
    /// Builds the session over that output; pass one sharing the daemon's preloaded SoundFont.
    public var makeSession: @Sendable (any AudioOutput) -> PlaybackSession
    /// Whether a song paused by the speaker's loss gets a new output when the speaker is back.
    /// A sound server moves a stream whose sink vanished onto another sink (its default: the
    /// box's own output) rather than failing it, and an ALSA handle on BlueALSA's old PCM may
    /// take audio while paused and fail only after the resume, so the song must be sent to the
    /// speaker's device again (`AudioBackend.outputGoesWithSpeaker`). Asked when the speaker is
    /// back, since `audio_output = auto` may have chosen another backend by then.
    public var newOutputWhenSpeakerBack: @Sendable () -> Bool

    public init(
        makeOutput: @escaping @Sendable (AudioRoute?) async throws -> any AudioOutput,
        makeSession: @escaping @Sendable (any AudioOutput) -> PlaybackSession,
        newOutputWhenSpeakerBack: @escaping @Sendable () -> Bool = { false }
    ) {
        self.makeOutput = makeOutput
        self.makeSession = makeSession
        self.newOutputWhenSpeakerBack = newOutputWhenSpeakerBack
    }

    /// The usual wiring: an output factory, and sessions sharing one SoundFont provider and clock.
    ///
    /// - Parameters:
    ///   - soundFont: the daemon's deferred SoundFont load; called on every song, so it must load
    ///     once and answer at once afterwards.
    ///   - clock: drives progress reports (and should pace real-time file/null outputs too).
    ///   - preRoll: silence before each song's first note once its stream opens (`pre_roll_ms`).
    ///   - keepAliveWhilePaused: a paused song's device hears the keep-alive signal (`keep_alive`).
    ///
    /// Sessions hold a song whose device stopped (`PlaybackSession.holdsSongWhenOutputStops`):
    /// the player decides whether it plays on a new stream or fails.
    public static func sessions(
        output makeOutput: @escaping @Sendable (AudioRoute?) async throws -> any AudioOutput,
        clock: any Clock<Duration> = ContinuousClock(),
        progressInterval: Duration = PlaybackSession.defaultProgressInterval,
        preRoll: Duration = .zero,
        keepAliveWhilePaused: Bool = false,
        keepAliveSound: KeepAliveSound = .bursts,
        newOutputWhenSpeakerBack: @escaping @Sendable () -> Bool = { false },
        soundFont: @escaping @Sendable () async throws -> SoundFont
    ) -> PlaybackComponents {
        PlaybackComponents(makeOutput: makeOutput, makeSession: { output in
            PlaybackSession(output: output, clock: clock, progressInterval: progressInterval, preRoll: preRoll,
                           keepAliveWhilePaused: keepAliveWhilePaused, keepAliveSound: keepAliveSound,
                           holdsSongWhenOutputStops: true, soundFont: soundFont)
        }, newOutputWhenSpeakerBack: newOutputWhenSpeakerBack)
    }
}

/// The player's settings, from the daemon's configuration (`play_timeout`, `on_speaker_lost`).
public struct PlaybackServiceSettings: Sendable, Equatable {
    /// How long a `play` request waits for `.playbackReady` before failing.
    public var playTimeout: Duration
    /// Pause (and resume when the speaker is back) or stop when the speaker drops mid-song.
    public var onSpeakerLost: SpeakerLostBehaviour
    /// Limits applied to every song read from a client.
    public var readLimits: MIDIReadLimits
    /// How long a client may take to send its whole song: a pipe whose writer is stuck or never
    /// closes fails the request after this, instead of holding it (and a thread) forever.
    public var readTimeout: Duration
    /// Play the inaudible keep-alive signal to the ready speaker while no song plays (`keep_alive`).
    public var keepAlive: Bool
    /// The bytes songs being read from clients may hold, in all and per client (`SongReadBudget`).
    public var readBudget: SongReadLimits
    /// How many songs the queue holds, and how much memory they may take (`PlayQueueLimits`).
    public var queueLimits: PlayQueueLimits
    /// What the keep-alive plays (`keep_alive = yes`, `silence` or `tone`).
    public var keepAliveSound: KeepAliveSound

    public init(playTimeout: Duration = .seconds(30), onSpeakerLost: SpeakerLostBehaviour = .pause,
                readLimits: MIDIReadLimits = .default, readTimeout: Duration = .seconds(10), keepAlive: Bool = false,
                keepAliveSound: KeepAliveSound = .bursts,
                readBudget: SongReadLimits = .default, queueLimits: PlayQueueLimits = .default) {
        self.playTimeout = playTimeout
        self.onSpeakerLost = onSpeakerLost
        self.readLimits = readLimits
        self.readTimeout = readTimeout
        self.keepAlive = keepAlive
        self.readBudget = readBudget
        self.queueLimits = queueLimits
        self.keepAliveSound = keepAliveSound
    }
}
