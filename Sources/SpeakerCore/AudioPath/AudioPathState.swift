/// Whether audio can reach the speaker now, as the audio backend sees it.
///
/// The daemon turns a problem into its readiness reason (`NotReadyReason`), which adds the
/// stable code and whether waiting can succeed; here it is only what was seen.
public enum AudioPathState: Equatable, Sendable {
    /// Not looked at yet.
    case unknown
    /// Audio can go to the speaker, on this route (its description says through what:
    /// "BlueALSA PCM …", "WAV file …").
    case ready(AudioRoute)
    case notReady(AudioPathProblem)
}

/// Why audio cannot reach the speaker.
public enum AudioPathProblem: Equatable, Sendable {
    /// The speaker (named) has no audio device yet on the chosen stack; `detail` says what is
    /// missing ("BlueALSA has no A2DP playback PCM for it yet"). Usually comes with the link.
    case noAudioDevice(String, String)
    /// The sound server cannot be reached; the sentence says where speakerd looked.
    case soundServerUnreachable(String)
    /// The configured output cannot be used (a WAV file's directory is not writable).
    case outputUnusable(String)
    /// `auto` found no way to the speaker itself: BlueALSA is not on the system bus and no sound
    /// server answers. The text says where speakerd looked. `auto` never falls back to an ALSA
    /// device here: on a Pi ALSA's `default` is HDMI or the headphone jack, not the speaker.
    case noBluetoothAudioPath(String)
}

extension AudioPathState {
    /// The route while ready (nil otherwise).
    public var route: AudioRoute? {
        if case .ready(let route) = self { route } else { nil }
    }

    /// A problem with the output or the sound server, not with one speaker's device: it stays
    /// true when the daemon turns to another speaker, until the path is looked at again.
    public var holdsForAnySpeaker: Bool {
        switch self {
        case .notReady(.outputUnusable), .notReady(.soundServerUnreachable), .notReady(.noBluetoothAudioPath): true
        case .unknown, .ready, .notReady(.noAudioDevice): false
        }
    }
}
