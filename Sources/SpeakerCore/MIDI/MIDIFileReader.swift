/// The strict, safe Standard MIDI File reader: bytes in, a validated song (or one clear error) out.
///
/// Everything the engine plays goes through here first, so FluidSynth only ever sees events we
/// have validated and timed ourselves. Rules, each documented where it is applied:
/// - formats 0, 1, 2 (`MIDISong(_:limits:)`), RMID wrappers (`RMIDUnwrapper`), unknown chunks
///   skipped and chunk lengths checked (`MIDIChunkReader`);
/// - running status (`MIDIRunningStatusPolicy`), system messages (`MIDISystemMessage`), VLQs of at
///   most 4 bytes, lengths checked against the chunk (`MIDITrackParser`);
/// - a track without End of Track ends at its chunk's end (a warning, not an error); a chunk
///   that runs past the end of the file is an error; bytes after the last track are ignored;
/// - limits against hostile files (`MIDIReadLimits`).
public enum MIDIFileReader {
    /// Reads a whole file into a playable song.
    public static func read(
        _ bytes: some Collection<UInt8>,
        limits: MIDIReadLimits = .default,
        runningStatus: MIDIRunningStatusPolicy = .continuesAcrossNonChannelEvents
    ) throws(MIDIFileError) -> MIDISong {
        try MIDISong(parse(bytes, limits: limits, runningStatus: runningStatus), limits: limits)
    }

    /// Reads a whole file into its tick-level model, for inspection.
    public static func parse(
        _ bytes: some Collection<UInt8>,
        limits: MIDIReadLimits = .default,
        runningStatus: MIDIRunningStatusPolicy = .continuesAcrossNonChannelEvents
    ) throws(MIDIFileError) -> MIDIFile {
        guard bytes.count <= limits.maxFileBytes else {
            throw MIDIFileError(.limitExceeded(.fileBytes, value: bytes.count, limit: limits.maxFileBytes))
        }
        let bytes = Array(bytes)
        guard !bytes.isEmpty else { throw MIDIFileError(.empty) }
        let range = RMIDUnwrapper.isRIFF(bytes) ? try RMIDUnwrapper.midiRange(in: bytes) : bytes.indices
        let chunks = try MIDIChunkReader(bytes, range: range, limits: limits)
        var warnings = MIDIWarningLog(limit: limits.maxWarnings)
        warnings.add(contentsOf: chunks.warnings)
        var tracks: [MIDITrack] = []
        var eventCount = 0
        for (index, chunk) in chunks.tracks.enumerated() {
            var parser = MIDITrackParser(bytes, chunk: chunk, trackNumber: index + 1, limits: limits,
                                     policy: runningStatus, warnings: warnings)
            tracks.append(try parser.parse(chunkOffset: chunk.chunkOffset, eventCount: &eventCount))
            warnings = parser.warnings
        }
        return MIDIFile(format: chunks.header.format, division: chunks.header.division, tracks: tracks,
                        warnings: warnings.finished(endOffset: range.upperBound))
    }
}
