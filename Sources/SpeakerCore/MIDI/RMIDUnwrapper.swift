/// Finds the Standard MIDI File inside an RMID (RIFF MIDI) wrapper.
///
/// Windows tools save songs as `RIFF <size> RMID` with the SMF in a `data` chunk, often beside
/// `LIST`/`INFO` chunks; FluidSynth rejects these outright. Unwrapping here lets every later
/// step see plain SMF bytes, while offsets stay those of the whole file.
enum RMIDUnwrapper {
    /// Whether the file starts like a RIFF container (the caller then requires it to be RMID).
    static func isRIFF(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: Array("RIFF".utf8))
    }

    /// The absolute byte range of the SMF inside the RMID file.
    static func midiRange(in bytes: [UInt8]) throws(MIDIFileError) -> Range<Int> {
        var reader = MIDIByteReader(bytes)
        _ = reader.skip(4)  // "RIFF"
        guard let size = reader.readUInt32LE() else {
            throw MIDIFileError(.truncated(what: "the RIFF header", fileEnd: bytes.count, declaredEnd: 8), at: 4)
        }
        let riffEnd = 8 + Int(size)
        guard riffEnd <= bytes.count else {
            throw MIDIFileError(.truncated(what: "the RIFF file", fileEnd: bytes.count, declaredEnd: riffEnd), at: 4)
        }
        guard let formType = reader.readBytes(4) else {
            throw MIDIFileError(.riffButNotRMID(formType: ""), at: 8)
        }
        guard formType == Array("RMID".utf8) else {
            throw MIDIFileError(.riffButNotRMID(formType: MIDIByteText.printable(formType)), at: 8)
        }
        var chunks = MIDIByteReader(bytes, from: 12, to: riffEnd)
        while chunks.remaining >= 8 {
            let chunkStart = chunks.offset
            let tag = chunks.readTag()
            let length = Int(chunks.readUInt32LE() ?? 0)
            let dataStart = chunks.offset
            guard length <= chunks.remaining else {
                throw MIDIFileError(
                    .truncated(what: "RIFF chunk '\(tag ?? "")'", fileEnd: riffEnd, declaredEnd: dataStart + length),
                    at: chunkStart)
            }
            if tag == "data" { return dataStart..<dataStart + length }
            // RIFF chunks are padded to an even length; a missing pad byte at the very end is harmless.
            _ = chunks.skip(min(length + (length & 1), chunks.remaining))
        }
        throw MIDIFileError(.rmidWithoutData, at: 12)
    }
}
