import ArgumentParser
import MIDI
import Playback

/// The composer's controls a song is played or rendered with (`render`, and `play` where the
/// daemon supports them): where to start and stop, a section to loop, tempo, key, muted or
/// soloed parts, a count-in.
struct ArrangementOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Starts at this bar (BAR[:BEAT[:TICK]]) or time (like 12.5s).", valueName: "pos"))
    var from: String?

    @Option(help: ArgumentHelp("Stops at this bar or time.", valueName: "pos"))
    var to: String?

    @Option(help: ArgumentHelp(
        "Loops bars A to B (both included, like 17-24) or times (like 10s-20s); starts at A unless --from says otherwise.",
        valueName: "A-B"))
    var loop: String?

    @Option(name: .customLong("loop-count"), help: ArgumentHelp("Plays the loop this many times (1 to 1000).", valueName: "n"))
    var loopCount: Int = 1

    @Option(help: ArgumentHelp("Plays at this tempo: a percentage (80%) or quarter notes per minute (96bpm).", valueName: "tempo"))
    var tempo: String?

    // `--transpose -2` must take -2 as its value, not as an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Moves every note but percussion (channel 10) by this many semitones.", valueName: "±n"))
    var transpose: Int = 0

    @Option(help: ArgumentHelp("Silences these parts: channels 1-16 or track names, comma-separated.", valueName: "list"))
    var mute: String?

    @Option(help: ArgumentHelp("Plays only these parts: channels 1-16 or track names, comma-separated.", valueName: "list"))
    var solo: String?

    @Option(name: .customLong("count-in"), help: ArgumentHelp("Clicks this many bars before the song.", valueName: "bars"))
    var countIn: Int = 0

    func validate() throws {
        _ = try arrangement()
    }

    /// The options as written, for `play` to send to speakerd (which checks them again).
    var text: ArrangementText {
        ArrangementText(from: from, to: to, loop: loop, loopCount: loopCount, tempo: tempo, transpose: transpose,
                        mute: mute, solo: solo, countIn: countIn)
    }

    /// The arrangement asked for; a malformed value is a usage error naming the option.
    func arrangement() throws -> SongArrangement {
        do { return try text.arrangement() } catch { throw ValidationError(error.description) }
    }
}
