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
    ///
    /// Formats 0 and 1 are read straight into the packed song (`PackedSongReading`): each event
    /// is packed as the parser reads it, so the tick-level model (about 40 bytes an event) is
    /// never held for the whole file. Format 2, and a file the packing cannot hold, go through
    /// `parse` and `MIDISong(_:limits:)`; both ways give the same song.
    public static func read(
        _ bytes: some Collection<UInt8>,
        limits: MIDIReadLimits = .default,
        runningStatus: MIDIRunningStatusPolicy = .continuesAcrossNonChannelEvents
    ) throws(MIDIFileError) -> MIDISong {
        let file = try Self.chunks(of: bytes, limits: limits)
        if file.chunks.header.format != .sequentialTracks {
            let reading = PackedSongReading(trackCount: file.chunks.tracks.count)
            let (tracks, warnings) = try Self.tracks(of: file, limits: limits, runningStatus: runningStatus) { index, event in
                reading.take(event, track: index)
            }
            if let song = try reading.song(division: file.chunks.header.division, tracks: tracks, warnings: warnings, limits: limits) {
                return song
            }
        }
        return try MIDISong(parse(bytes, limits: limits, runningStatus: runningStatus), limits: limits)
    }

    /// Reads a whole file into its tick-level model, for inspection.
    public static func parse(
        _ bytes: some Collection<UInt8>,
        limits: MIDIReadLimits = .default,
        runningStatus: MIDIRunningStatusPolicy = .continuesAcrossNonChannelEvents
    ) throws(MIDIFileError) -> MIDIFile {
        let file = try Self.chunks(of: bytes, limits: limits)
        let (tracks, warnings) = try Self.tracks(of: file, limits: limits, runningStatus: runningStatus, handOn: nil)
        return MIDIFile(format: file.chunks.header.format, division: file.chunks.header.division, tracks: tracks, warnings: warnings)
    }

    /// The file's bytes, where its MIDI data lies (inside an RMID wrapper or not) and its chunks.
    private static func chunks(
        of bytes: some Collection<UInt8>, limits: MIDIReadLimits
    ) throws(MIDIFileError) -> (bytes: [UInt8], range: Range<Int>, chunks: MIDIChunkReader) {
        guard bytes.count <= limits.maxFileBytes else {
            throw MIDIFileError(.limitExceeded(.fileBytes, value: bytes.count, limit: limits.maxFileBytes))
        }
        let bytes = Array(bytes)
        guard !bytes.isEmpty else { throw MIDIFileError(.empty) }
        let range = RMIDUnwrapper.isRIFF(bytes) ? try RMIDUnwrapper.midiRange(in: bytes) : bytes.indices
        return (bytes, range, try MIDIChunkReader(bytes, range: range, limits: limits))
    }

    /// Every track parsed, with the file's warnings; with `handOn`, each event goes there (with
    /// its track's index) instead of into its track.
    private static func tracks(
        of file: (bytes: [UInt8], range: Range<Int>, chunks: MIDIChunkReader), limits: MIDIReadLimits,
        runningStatus: MIDIRunningStatusPolicy, handOn: ((Int, MIDITrackEvent) -> Void)?
    ) throws(MIDIFileError) -> (tracks: [MIDITrack], warnings: [MIDIFileWarning]) {
        var warnings = MIDIWarningLog(limit: limits.maxWarnings)
        warnings.add(contentsOf: file.chunks.warnings)
        var tracks: [MIDITrack] = []
        var eventCount = 0
        for (index, chunk) in file.chunks.tracks.enumerated() {
            var parser = MIDITrackParser(file.bytes, chunk: chunk, trackNumber: index + 1, limits: limits,
                                         policy: runningStatus, warnings: warnings,
                                         handOn: handOn.map { handOn in { handOn(index, $0) } })
            tracks.append(try parser.parse(chunkOffset: chunk.chunkOffset, eventCount: &eventCount))
            warnings = parser.warnings
        }
        return (tracks, warnings.finished(endOffset: file.range.upperBound))
    }
}
