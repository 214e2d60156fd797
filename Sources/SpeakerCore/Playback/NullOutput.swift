/// Renders the song and throws the audio away.
///
/// Useful for a daemon without a speaker, for tests of the engine's state machine, and for
/// benchmarks. In real time (on an injected clock) position advances as it would on a speaker;
/// offline it consumes the song as fast as the synthesiser renders it.
public struct NullOutput: AudioOutput {
    public let pacing: OutputPacing

    public init(pacing: OutputPacing) {
        self.pacing = pacing
    }

    public var description: String { "null" }

    public func play(_ source: PlaybackSource) async throws {
        try await PacedRenderLoop.run(source, pacing: pacing) { _ in }
    }
}
