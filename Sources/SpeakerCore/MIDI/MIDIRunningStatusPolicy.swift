/// What a data byte means when it follows a meta, sysex or system common event with no status.
///
/// The SMF specification says meta and sysex events cancel running status, so such a data byte
/// has no status to apply and the file is malformed. Yet files exist that do exactly this: many
/// real-world writers only track the last *channel* status they wrote, and the jazz-soft corpus
/// tests it on purpose (`test-running-status-metaevent.mid` has `FF 01 05 "break" 00 43 7F`,
/// `test-running-status-sysex.mid` has `F0 05 7E 7F 06 01 F7 00 43 7F` in the middle of a
/// C major scale under running status 0x90). A data byte can only be a data byte, and the only
/// status that could give it meaning is the last channel status, which turns those bytes into
/// exactly the notes the files announce ("You must hear a C-Major scale"). FluidSynth follows the
/// letter of the spec and plays nothing; we play the scale and record a `MIDIFileWarning`.
public enum MIDIRunningStatusPolicy: Sendable, Equatable {
    /// Keep the last channel status across meta, sysex and system common events (the default):
    /// the robust reading that plays the files above as their authors meant.
    case continuesAcrossNonChannelEvents
    /// The letter of the specification: meta, sysex and system common events cancel running
    /// status, and a data byte after them is an error. Real-time messages never affect it.
    case cancelledByNonChannelEvents
}
