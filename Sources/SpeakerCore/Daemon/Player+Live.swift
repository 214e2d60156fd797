import AudioPath
import Playback
import PlaybackService
import Readiness
import Configuration
import SpeakerdAPI

/// The daemon's configuration turned into its player's parts: the one place the player meets
/// `DaemonConfiguration` and the daemon's readiness reasons.
extension Player {
    /// The player the live daemon uses: songs rendered by FluidSynth with the configured
    /// soundfont, each to the output `audio` opens on the route the daemon hands over.
    public static func live(configuration: DaemonConfiguration, gate: ReadinessGate<DaemonReadiness>,
                            audio: any AudioBackend, clock: any Clock<Duration> = ContinuousClock()) -> Player {
        let soundFonts = SoundFontCache(defaultPath: configuration.soundfont)
        let components = PlaybackComponents.sessions(
            output: { route throws -> any AudioOutput in
                // The gate lets a song start only on a ready path, whose route the daemon gave first.
                guard let route else {
                    throw PlaybackServiceError.startFailed(file: "the song", reason: "no speaker is connected for audio_output = \(configuration.audioOutput)")
                }
                do throws(AudioRouteError) { return try audio.output(on: route) } catch {
                    throw PlaybackServiceError.startFailed(file: "the song", reason: error.reason)
                }
            },
            clock: clock,
            preRoll: configuration.preRoll,
            keepAliveWhilePaused: configuration.keepAlive,
            keepAliveSound: configuration.keepAliveSound,
            newOutputWhenSpeakerBack: { audio.outputGoesWithSpeaker },
            soundFont: { try await soundFonts.load() }
        )
        return Player(gate: gate, settings: PlaybackServiceSettings(configuration), components: components,
                      soundFonts: soundFonts, clock: clock)
    }
}

extension PlaybackServiceSettings {
    /// The settings a daemon configuration asks for.
    public init(_ configuration: DaemonConfiguration) {
        self.init(playTimeout: configuration.playTimeout, onSpeakerLost: configuration.onSpeakerLost,
                  keepAlive: configuration.keepAlive, keepAliveSound: configuration.keepAliveSound,
                  readBudget: configuration.readBudget, queueLimits: configuration.queueLimits)
    }
}

extension PlaybackWait {
    /// What the player hears of a readiness reason: its sentence, and whether waiting can succeed.
    public init(_ reason: NotReadyReason) {
        self.init(message: reason.message, waitingCanSucceed: reason.waitingCanSucceed)
    }
}

extension LinkSnapshot.Target {
    /// The target as the player knows it.
    var speaker: TargetSpeaker { TargetSpeaker(address: address, name: name) }
}
