import ArgumentParser
import MIDI
import Playback

/// The composer's controls a song is played or rendered with (`render`, and `play` where the
/// daemon supports them): where to start and stop, a section to loop, tempo, key, muted or
/// soloed parts, a count-in.
struct ArrangementOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Starts at this bar (BAR[:BEAT[:TICK]]) or time (like 12.5s).", valueName: "pos"))
    var from: String?

    @Option(help: ArgumentHelp("Stops at the end of this bar (included, as in --loop: --from 9 --to 16 plays bars 9 to 16), at a beat (16:3) or a time (like 40s).", valueName: "pos"))
    var to: String?

    @Option(help: ArgumentHelp(
        "Loops bars A to B (both included, like 17-24) or times (like 10s-20s); starts at A unless --from says otherwise.",
        valueName: "A-B"))
    var loop: String?

    @Option(name: .customLong("loop-count"), help: ArgumentHelp(
        "Plays the loop this many times (1 to 1000); needs --loop. Without it, play loops until 'composer-cli loop off' and render plays it once.",
        valueName: "n"))
    var loopCount: Int?

    @Option(help: ArgumentHelp("Plays at this tempo: a percentage (80%), or 96bpm: the song's opening tempo becomes 96 quarter notes a minute and every later tempo keeps its proportion to it.", valueName: "tempo"))
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
        if let loopCount, !(1...SongArrangement.maxLoopPasses).contains(loopCount) {
            throw ValidationError("--loop-count: a loop plays 1 to \(SongArrangement.maxLoopPasses) times, not \(loopCount)")
        }
        _ = try arrangement()
        do { _ = try text.arrangement() } catch { throw ValidationError(error.description) }
    }

    /// The options as written, for `play` to send to speakerd (which checks them again): a loop
    /// without `--loop-count` plays until `composer-cli loop off` (LoopCount 0).
    var text: ArrangementText { written(loopCount: loopCount ?? (loop != nil ? 0 : 1)) }

    /// The arrangement `render` writes (a loop without `--loop-count` plays once); a malformed
    /// value is a usage error naming the option.
    func arrangement() throws -> SongArrangement {
        do { return try written(loopCount: loopCount ?? 1).arrangement() } catch { throw ValidationError(error.description) }
    }

    private func written(loopCount: Int) -> ArrangementText {
        ArrangementText(from: from, to: to, loop: loop, loopCount: loopCount, tempo: tempo, transpose: transpose,
                        mute: mute, solo: solo, countIn: countIn)
    }
}
