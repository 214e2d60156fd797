import MIDI
import Testing

@Suite("RMID wrapper")
struct RMIDTests {
    let smf = SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40] + SMF.endOfTrack])

    func riff(_ form: String, _ chunks: [UInt8]) -> [UInt8] {
        Array("RIFF".utf8) + SMF.le32(4 + chunks.count) + Array(form.utf8) + chunks
    }

    func riffChunk(_ tag: String, _ body: [UInt8]) -> [UInt8] {
        Array(tag.utf8) + SMF.le32(body.count) + body + (body.count.isMultiple(of: 2) ? [] : [0])
    }

    @Test("an RMID file plays the SMF in its data chunk, after an odd-sized LIST chunk")
    func unwrapsData() throws {
        let bytes = riff("RMID", riffChunk("LIST", Array("INFOabc".utf8)) + riffChunk("data", smf))
        let song = try MIDIFileReader.read(bytes)
        #expect(song.messages == [.noteOn(channel: 0, key: 60, velocity: 100), .noteOff(channel: 0, key: 60, velocity: 64)])
        #expect(song.durationSeconds == 0.5)
    }

    @Test("errors inside an RMID name offsets in the whole file")
    func offsetsAreAbsolute() {
        var inner = smf
        inner[SMF.firstEventOffset + 1] = 0x3C  // data byte with no status
        let bytes = riff("RMID", riffChunk("data", inner))
        #expect(readError(bytes)?.description == "byte \(20 + SMF.firstEventOffset + 1): data byte 0x3C with no status byte before it (no running status to apply)")
    }

    @Test("a RIFF file that is not RMID is rejected as not MIDI")
    func waveFile() {
        #expect(readError(riff("WAVE", riffChunk("fmt ", [1, 0])))?.description
            == "byte 8: not a MIDI file: starts with 'RIFF' but is not RMID (its form type is 'WAVE')")
    }

    @Test("an RMID without a data chunk is rejected")
    func noData() {
        #expect(readError(riff("RMID", riffChunk("LIST", [1, 2])))?.description == "byte 12: RMID file has no 'data' chunk holding the MIDI file")
    }

    @Test("a RIFF size larger than the file is truncated")
    func riffTruncated() {
        var bytes = riff("RMID", riffChunk("data", smf))
        bytes.removeLast(2)
        #expect(readError(bytes)?.description == "byte 4: truncated: the RIFF file ends at byte \(bytes.count) but its chunk says \(bytes.count + 2)")
    }

    @Test("an empty data chunk is an empty MIDI file")
    func emptyData() {
        #expect(readError(riff("RMID", riffChunk("data", [])))?.description == "byte 20: file is empty")
    }
}
