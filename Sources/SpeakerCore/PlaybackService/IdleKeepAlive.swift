import AudioPath
import Logging
import Playback

/// `keep_alive`: the inaudible `KeepAliveSignal` played to the ready speaker while no song plays,
/// so that it does not power itself off.
///
/// The player decides when (idle, and the audio path ready) and calls `run()` / `halt()`;
/// it holds this value as part of its own state, so deciding and starting happen in one step on
/// the player's actor (a song starting meanwhile cannot slip between them). It opens the same kind of output a song would (the
/// speaker's sink or PCM, or the configured file), so it reaches exactly the speaker a song
/// would. It is best-effort: an output that cannot open or dies is logged, and the next
/// `run()` (the next time the speaker becomes ready or a song ends) tries again.
struct IdleKeepAlive {
    private enum State {
        case off
        case playing(PlaybackSource, Task<Void, Never>)
    }

    private let makeOutput: @Sendable (AudioRoute?) async throws -> any AudioOutput
    private let sampleRate: Int
    private let sound: KeepAliveSound
    private let logger: Logger
    private var state = State.off

    init(makeOutput: @escaping @Sendable (AudioRoute?) async throws -> any AudioOutput,
         sampleRate: Int = SoundFont.defaultSampleRate, sound: KeepAliveSound = .bursts, logger: Logger) {
        self.makeOutput = makeOutput
        self.sampleRate = sampleRate
        self.sound = sound
        self.logger = logger
    }

    /// True while the signal has an output playing it.
    var isPlaying: Bool {
        if case let .playing(source, _) = state { return !source.hasEnded }
        return false
    }

    /// Starts the signal on `route` unless it already plays; the output opens in the background.
    mutating func run(on route: AudioRoute?) {
        if isPlaying { return }
        // At the device's own rate when the route knows it, as songs are: nothing resamples it.
        let source = PlaybackSource(keepAliveAt: SoundFont.playableRate(route?.sampleRate) ?? sampleRate, sound: sound)
        let makeOutput = makeOutput
        let logger = logger
        let task = Task {
            do {
                let output = try await makeOutput(route)
                try await output.waitUntilReady()
                try Task.checkCancellation()
                try await output.play(source)
            } catch is CancellationError {
            } catch {
                source.stop()
                logger.warning("keep_alive: could not play to the speaker (\(error)); trying again when it is next ready")
            }
        }
        state = .playing(source, task)
    }

    /// Stops the signal; await the returned task (its output closing) before a song's output
    /// opens, so the two never hold the speaker (or the same file) at once.
    mutating func halt() -> Task<Void, Never>? {
        guard case let .playing(source, task) = state else { return nil }
        state = .off
        source.stop()
        task.cancel()
        return task
    }
}
