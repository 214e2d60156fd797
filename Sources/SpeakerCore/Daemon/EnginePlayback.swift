import Foundation
import Logging
import SystemPackage

/// The daemon's `DaemonPlayback` over the audio engineer's `PlaybackEngine`.
///
/// Holds what the engine does not know about: which output the configuration asks for (for
/// `auto`, BlueALSA's PCM of the connected speaker), the soundfont loaded once, the queue, and
/// whether a pause was the speaker's doing (so its return resumes the song) or the user's.
public actor EnginePlayback: DaemonPlayback {
    private enum Hold {
        case none
        case pausedBySpeakerLoss
    }

    private let configuration: DaemonConfiguration
    private let clock: any Clock<Duration>
    private let logger: Logger
    private var soundFontLoad: Task<SoundFont, any Error>?
    private var engine: PlaybackEngine?
    private var queue: [(song: MIDISong, title: String)] = []
    private var queueRunner: Task<Void, Never>?
    private var hold: Hold = .none

    public init(configuration: DaemonConfiguration, clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "speakerd.playback")) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    public func preloadSoundfont(_ path: String) async throws {
        _ = try await soundFont(path)
    }

    private func soundFont(_ path: String) async throws -> SoundFont {
        if let soundFontLoad { return try await soundFontLoad.value }
        let load = Task { () throws -> SoundFont in try await SoundFont.load(path: path) }
        soundFontLoad = load
        return try await load.value
    }

    /// A file output needs a writable directory; devices are checked when the speaker is there.
    public func checkOutput() async throws {
        guard case .file(let path) = configuration.audioOutput else { return }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard access(directory, W_OK) == 0 else {
            throw PlaybackSetupError("cannot write audio to \(path): \(directory) is not writable")
        }
    }

    public func waitForAudioPath(speaker: String?) async throws {
        let spec: AudioOutputSpec
        switch configuration.audioOutput {
        case .automatic:
            guard let speaker else { throw PlaybackSetupError("no speaker is connected") }
            spec = .bluealsa(address: speaker)
        case .alsa(let device): spec = .alsa(device: device)
        case .pulseAudio: spec = .pulseAudio
        case .file(let path): spec = .file(path: path)
        case .null: spec = .null
        }
        let output = spec.makeOutput(pacing: .realTime(clock))
        try await output.waitUntilReady()
        if let engine {
            try await engine.replaceOutput(with: output)
        } else {
            let soundfontPath = configuration.soundfont
            engine = PlaybackEngine(output: output, clock: clock) { [weak self] in
                guard let self else { throw PlaybackSetupError("the daemon is stopping") }
                return try await self.soundFont(soundfontPath)
            }
        }
    }

    public func play(file: FileDescriptor, displayName: String, queue append: Bool) async throws {
        defer { try? file.close() }
        guard let engine else { throw PlaybackSetupError("the audio output is not ready") }
        let song = try MIDIFileReader.read(from: file, name: displayName)
        if append, ["playing", "paused", "loading"].contains(await engine.state.name) {
            queue.append((song, displayName))
            startQueueRunner(engine)
            return
        }
        queue.removeAll()
        hold = .none
        try await engine.play(song, title: displayName)
        startQueueRunner(engine)
    }

    /// Plays queued songs one after another as each ends on its own.
    private func startQueueRunner(_ engine: PlaybackEngine) {
        guard queueRunner == nil else { return }
        queueRunner = Task { [weak self] in
            while let self, !Task.isCancelled {
                let ended = await engine.waitUntilEnded()
                guard ended == .finished, let next = await self.dequeue() else { break }
                do { try await engine.play(next.song, title: next.title) } catch { break }
            }
            await self?.runnerEnded()
        }
    }

    private func dequeue() -> (song: MIDISong, title: String)? { queue.isEmpty ? nil : queue.removeFirst() }
    private func runnerEnded() { queueRunner = nil }

    public func stop() async {
        queue.removeAll()
        hold = .none
        await engine?.stop()
    }

    public func pause() async throws {
        hold = .none
        try await engine?.pause()
    }

    public func resume() async throws {
        hold = .none
        try await engine?.resume()
    }

    public func speakerLost() async {
        guard let engine, await engine.state == .playing else { return }
        switch configuration.onSpeakerLost {
        case .pause:
            if (try? await engine.pause()) != nil { hold = .pausedBySpeakerLoss }
        case .stop:
            await stop()
        }
    }

    public func speakerBack() async {
        guard case .pausedBySpeakerLoss = hold, let engine else { return }
        hold = .none
        do { try await engine.resume() } catch { logger.warning("could not resume after reconnect: \(error)") }
    }

    public func snapshot() async -> StatusReport.Playback {
        guard let engine else { return .idle }
        let state = await engine.state
        guard state == .playing || state == .paused || state == .loading else { return .idle }
        return StatusReport.Playback(state: state.name, file: await engine.title,
                                     positionSeconds: await engine.positionSeconds,
                                     durationSeconds: await engine.durationSeconds)
    }
}

/// The playback side cannot be set up as configured.
public struct PlaybackSetupError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
