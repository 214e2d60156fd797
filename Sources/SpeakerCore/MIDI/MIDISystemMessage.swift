/// Policy for system common and real-time status bytes found inside a track (F1–F6, F8–FE).
///
/// None of these belong in a Standard MIDI File, but the jazz-soft corpus has one file per byte
/// (`test-illegal-message-*.mid`), each followed by a C major scale the listener "must hear".
/// The rule we apply is the one that never guesses:
/// - a message whose length MIDI 1.0 defines is skipped with its data bytes and the rest of the
///   track plays: F1 (time code quarter frame, 1 byte), F2 (song position, 2), F3 (song select, 1),
///   F6 (tune request, 0), and every real-time byte F8–FE, which MIDI 1.0 defines as single bytes
///   whether assigned (F8, FA, FB, FC, FE) or not (F9, FD);
/// - F4 and F5, undefined system *common* messages, have no defined length: the bytes after them
///   could be their data or the next delta time, so reading on would be guessing. They are errors
///   naming the offset (which is why `test-illegal-message-all.mid` is rejected too).
/// Skipped messages stay in `MIDITrack.events` as `.ignoredSystemMessage` and produce a warning;
/// they never reach the synthesiser.
enum MIDISystemMessage {
    /// Data bytes following `status`, or `nil` when MIDI 1.0 does not define the message's length.
    static func dataByteCount(of status: UInt8) -> Int? {
        switch status {
        case 0xF1, 0xF3: 1
        case 0xF2: 2
        case 0xF6: 0
        case 0xF8...0xFE: 0
        default: nil
        }
    }

    /// System common messages cancel running status on the wire; real-time ones never do.
    static func isCommon(_ status: UInt8) -> Bool {
        (0xF1...0xF6).contains(status)
    }

    static func name(of status: UInt8) -> String {
        switch status {
        case 0xF1: "MIDI time code quarter frame"
        case 0xF2: "song position pointer"
        case 0xF3: "song select"
        case 0xF6: "tune request"
        case 0xF8: "timing clock"
        case 0xFA: "start"
        case 0xFB: "continue"
        case 0xFC: "stop"
        case 0xFE: "active sensing"
        default: "undefined real-time message"
        }
    }
}
