import MIDI
import Testing

@Suite("Variable-length quantities")
struct VariableLengthQuantityTests {
    @Test("the largest 4-byte delta time, 0x0FFFFFFF, is accepted")
    func largestDelta() throws {
        let file = try MIDIFileReader.parse(SMF.file(tracks: [[0xFF, 0xFF, 0xFF, 0x7F, 0x90, 0x3C, 0x64] + SMF.endOfTrack]))
        #expect(file.tracks[0].events[0].tick == 0x0FFF_FFFF)
    }

    @Test("1- to 4-byte encodings of the same value agree")
    func redundantEncodings() throws {
        for delta: [UInt8] in [[0x60], [0x80, 0x60], [0x80, 0x80, 0x60], [0x80, 0x80, 0x80, 0x60]] {
            let song = try MIDIFileReader.read(SMF.file(tracks: [delta + [0x90, 0x3C, 0x64] + SMF.endOfTrack]))
            #expect(song.times == [0.5])
        }
    }

    @Test("a delta time of 5 bytes is rejected at its first byte")
    func fiveByteDelta() {
        let bytes = SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x81, 0x80, 0x80, 0x80, 0x00, 0x3C, 0x00] + SMF.endOfTrack])
        #expect(readError(bytes)?.description == "byte 26: variable-length quantity longer than 4 bytes")
    }

    @Test("a meta event length of 5 bytes is rejected at the length")
    func fiveByteLength() {
        let bytes = SMF.file(tracks: [[0x00, 0xFF, 0x01, 0x80, 0x80, 0x80, 0x80, 0x01] + SMF.endOfTrack])
        #expect(readError(bytes)?.description == "byte 25: variable-length quantity longer than 4 bytes")
    }

    @Test("a delta time cut off by the end of the chunk is an error")
    func truncatedDelta() {
        #expect(readError(SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x81]]))?.description
            == "byte 26: a delta time runs past the end of track 1's chunk")
    }
}
