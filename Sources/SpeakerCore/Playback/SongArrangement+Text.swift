import MIDI

extension ArrangementText {
    /// The arrangement these words ask for; a malformed value names its option.
    public func arrangement() throws(ArrangementTextError) -> SongArrangement {
        func position(_ text: String?, _ option: String, end: Bool = false) throws(ArrangementTextError) -> MIDISongPosition? {
            guard let text else { return nil }
            do {
                return try end ? MIDISongPosition(parsingEnd: text) : MIDISongPosition(parsing: text)
            } catch {
                throw .init(option: option, message: "\(error)")
            }
        }
        // 0 (what `play --loop` sends without --loop-count): until `composer-cli loop off`.
        guard ((loop == nil ? 1 : 0)...SongArrangement.maxLoopPasses).contains(loopCount) else {
            throw .init(option: "loop-count", message: "a loop plays 1 to \(SongArrangement.maxLoopPasses) times, not \(loopCount)")
        }
        // Options that would change nothing are said, not ignored.
        if loop == nil, loopCount != 1 {
            throw .init(option: "loop-count", message: "has no loop to repeat: give --loop A-B with it")
        }
        if loop != nil, to != nil {
            throw .init(option: "to", message: "has no effect with --loop: the song ends where the loop ends (B in A-B); give one or the other")
        }
        guard SongArrangement.transposeRange.contains(transpose) else {
            throw .init(option: "transpose", message: "-48 to +48 semitones, not \(transpose)")
        }
        guard (0...SongArrangement.maxCountInBars).contains(countIn) else {
            throw .init(option: "count-in", message: "0 to \(SongArrangement.maxCountInBars) bars, not \(countIn)")
        }
        var arrangement = SongArrangement(from: try position(from, "from"), to: try position(to, "to", end: true), loopPasses: loopCount,
                                          transpose: transpose, countInBars: countIn)
        if let loop {
            do { arrangement.loop = try LoopSection(parsing: loop) } catch { throw .init(option: "loop", message: "\(error)") }
        }
        if let tempo {
            guard let change = TempoChange(parsing: tempo) else {
                throw .init(option: "tempo", message: "'\(tempo)' is not a tempo: give a percentage (80%) or beats per minute (96bpm)")
            }
            arrangement.tempo = change
        }
        if let mute { arrangement.mute = SongPart.list(parsing: mute) }
        if let solo { arrangement.solo = SongPart.list(parsing: solo) }
        return arrangement
    }
}
