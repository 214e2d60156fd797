// libFuzzer entry point for the MIDI reader. Compiled together with Sources/SpeakerCore/MIDI
// (not as a package target) by scripts/fuzz-midi/run; see the README there.

/// Reads one input; traps (which libFuzzer reports as a crash with the input saved) when a
/// parsed song breaks an invariant or an error cannot explain itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMIDIReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        let song = try MIDIFileReader.read(bytes)
        precondition(song.durationSeconds.isFinite && song.durationSeconds >= 0, "bad duration")
        var previous = 0.0
        for event in song.events {
            precondition(event.seconds >= previous && event.seconds <= song.durationSeconds, "event out of order or past the end")
            previous = event.seconds
        }
    } catch {
        let text = error.description
        precondition(!text.isEmpty && !text.contains("\n"), "error without a one-line description")
        if let offset = error.offset { precondition(offset >= 0 && offset <= bytes.count, "error offset outside the file") }
    }
    return 0
}
