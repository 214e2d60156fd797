/// Reads an SMF's chunk structure: the MThd header and the byte ranges of its MTrk chunks.
///
/// Each chunk length is checked against the bytes that really exist before anything is read,
/// so a lying length is an error at the chunk's offset rather than a read past the end.
/// Chunks of unknown type are skipped, as the SMF specification asks of readers (the corpus's
/// `test-non-midi-track.mid` puts a "Junk" chunk before its track; FluidSynth plays silence).
struct MIDIChunkReader {
    /// The MThd fields, validated.
    struct Header: Equatable {
        var declaredFormat: UInt16
        var format: MIDIFileFormat
        var trackCount: Int
        var division: MIDITimeDivision
    }

    /// Where one MTrk chunk's events lie in the file.
    struct TrackChunk: Equatable {
        /// Offset of the "MTrk" tag.
        var chunkOffset: Int
        /// Absolute range of the event bytes.
        var data: Range<Int>
    }

    var header: Header
    var tracks: [TrackChunk]
    var warnings: [MIDIFileWarning]

    /// Reads the header and the declared number of track chunks from `range` of `bytes`.
    init(_ bytes: [UInt8], range: Range<Int>, limits: MIDIReadLimits) throws(MIDIFileError) {
        var reader = MIDIByteReader(bytes, from: range.lowerBound, to: range.upperBound)
        guard reader.remaining > 0 else { throw MIDIFileError(.empty, at: range.lowerBound) }
        let start = reader.offset
        guard reader.remaining >= 4, reader.readTag() == "MThd" else {
            throw MIDIFileError(.notMIDI(start: MIDIByteText.printable(bytes[start..<min(start + 4, reader.end)])), at: start)
        }
        guard let length = reader.readUInt32BE().map(Int.init) else {
            throw MIDIFileError(.truncated(what: "the MThd header", fileEnd: reader.end, declaredEnd: start + 8), at: start)
        }
        guard length >= 6 else { throw MIDIFileError(.headerTooShort(length: length), at: start + 4) }
        guard length <= reader.remaining else {
            throw MIDIFileError(.truncated(what: "the MThd header", fileEnd: reader.end, declaredEnd: reader.offset + length), at: start)
        }
        let fieldsStart = reader.offset
        // Length ≥ 6 was checked against the remaining bytes, so these three reads succeed.
        let declaredFormat = reader.readUInt16BE() ?? 0
        let trackCount = Int(reader.readUInt16BE() ?? 0)
        guard let format = MIDIFileFormat(rawValue: declaredFormat) else {
            throw MIDIFileError(.unsupportedFormat(declaredFormat), at: fieldsStart)
        }
        let divisionOffset = reader.offset
        let division = try Self.division(reader.readUInt16BE() ?? 0, at: divisionOffset)
        _ = reader.skip(length - 6)  // a longer header may carry future fields; the spec says skip them
        guard trackCount > 0 else { throw MIDIFileError(.noTracks, at: fieldsStart + 2) }
        guard trackCount <= limits.maxTracks else {
            throw MIDIFileError(.limitExceeded(.tracks, value: trackCount, limit: limits.maxTracks), at: fieldsStart + 2)
        }
        var warnings: [MIDIFileWarning] = []
        if format == .singleTrack && trackCount > 1 {
            // Format 0 means one track; with more, the only reading that loses nothing is format 1.
            warnings.append(MIDIFileWarning(offset: fieldsStart,
                message: "format 0 file declares \(trackCount) tracks; playing them together as format 1"))
        }
        header = Header(declaredFormat: declaredFormat, format: format, trackCount: trackCount, division: division)

        var tracks: [TrackChunk] = []
        while tracks.count < trackCount {
            let chunkOffset = reader.offset
            guard reader.remaining >= 8 else {
                throw MIDIFileError(.missingTracks(declared: trackCount, found: tracks.count), at: chunkOffset)
            }
            let tag = reader.readTag() ?? ""
            let length = Int(reader.readUInt32BE() ?? 0)
            let dataStart = reader.offset
            let isTrack = tag == "MTrk"
            guard length <= reader.remaining else {
                let what = isTrack ? "track \(tracks.count + 1)" : "chunk '\(tag)'"
                throw MIDIFileError(.truncated(what: what, fileEnd: reader.end, declaredEnd: dataStart + length), at: chunkOffset)
            }
            _ = reader.skip(length)
            if isTrack {
                tracks.append(TrackChunk(chunkOffset: chunkOffset, data: dataStart..<dataStart + length))
            }
        }
        if reader.remaining > 0 {
            // Padding and stray bytes after the last declared track are common and harmless
            // (test-corrupt-file-extra-byte.mid: "most players have no problem with that").
            warnings.append(MIDIFileWarning(offset: reader.offset,
                message: "ignored \(reader.remaining) bytes after the last declared track"))
        }
        self.tracks = tracks
        self.warnings = warnings
    }

    /// Decodes the division word: ticks per quarter note, or negative SMPTE frames per second
    /// (two's complement in the high byte) and ticks per frame.
    static func division(_ word: UInt16, at offset: Int) throws(MIDIFileError) -> MIDITimeDivision {
        if word & 0x8000 == 0 {
            guard word > 0 else { throw MIDIFileError(.invalidDivision("0 ticks per quarter note"), at: offset) }
            return .ticksPerQuarterNote(word)
        }
        let fps = -Int(Int8(bitPattern: UInt8(word >> 8)))
        guard let rate = SMPTEFrameRate(rawValue: fps) else {
            throw MIDIFileError(.invalidDivision("\(fps) SMPTE frames per second (must be 24, 25, 29 or 30)"), at: offset)
        }
        let ticksPerFrame = UInt8(word & 0xFF)
        guard ticksPerFrame > 0 else { throw MIDIFileError(.invalidDivision("0 ticks per SMPTE frame"), at: offset + 1) }
        return .smpte(framesPerSecond: rate, ticksPerFrame: ticksPerFrame)
    }
}
