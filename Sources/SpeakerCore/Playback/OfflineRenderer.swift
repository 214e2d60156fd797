import MIDI
/// Renders a song to a WAV file as fast as the CPU allows: `composer-cli render` and the tests.
///
/// The same scheduler and synthesiser as live playback, so what a test hears in the file is what
/// a speaker would play.
public enum OfflineRenderer {
    /// What a render produced.
    public struct Summary: Sendable, Equatable {
        public var frames: Int
        public var sampleRate: Int
        /// The song's duration from its tempo map, to the frame.
        public var songSeconds: Double
        /// Length of the audio written: the song plus its release tail (at most one second).
        public var audioSeconds: Double { Double(frames) / Double(sampleRate) }
        /// The release tail after the song's last event.
        public var tailSeconds: Double { max(0, audioSeconds - songSeconds) }
    }

    /// Renders `song` with `soundFont` into a 16-bit stereo WAV at `path` (replaced atomically).
    ///
    /// Throws `SoundFontError.inUse` if the SoundFont is playing something else,
    /// `AudioOutputError.fileNotWritable` when the file cannot be written, and
    /// `CancellationError` when the task is cancelled: then nothing is written at all.
    public static func render(_ song: MIDISong, soundFont: SoundFont, to path: String) async throws -> Summary {
        try await render(ArrangedSong(song: song), soundFont: soundFont, to: path)
    }

    /// `render`, for a song as arranged: its section loop's passes each on the same samples.
    public static func render(_ song: ArrangedSong, soundFont: SoundFont, to path: String) async throws -> Summary {
        let source = try PlaybackSource(arranged: song, soundFont: soundFont)
        defer { source.stop() }
        try await WAVFileOutput(path: path, pacing: .offline, keepWhenCancelled: false).play(source)
        return Summary(frames: source.renderedFrames, sampleRate: source.sampleRate, songSeconds: source.durationSeconds)
    }

    /// Renders `song` and discards the audio; returns the frames produced. For benchmarks and for
    /// checking a song end to end without touching the disk.
    public static func renderDiscarding(_ song: MIDISong, soundFont: SoundFont) async throws -> Summary {
        let source = try PlaybackSource(song: song, soundFont: soundFont)
        defer { source.stop() }
        try await NullOutput(pacing: .offline).play(source)
        return Summary(frames: source.renderedFrames, sampleRate: source.sampleRate, songSeconds: source.durationSeconds)
    }
}
