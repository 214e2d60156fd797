import SpeakerdAPI
/// The small value types a `DaemonConfiguration` is made of, each parsed from the text a user
/// writes in the config file or on the command line.

/// What playback does when the speaker drops in the middle of a song.
public enum SpeakerLostBehaviour: String, Equatable, Sendable, CaseIterable {
    /// Hold the position and resume once the speaker is back (the default).
    case pause
    /// End the song; the user starts it again.
    case stop
}

