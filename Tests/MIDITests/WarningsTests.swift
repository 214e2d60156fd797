import MIDI
import Testing

@Suite("Tolerated deviations are reported as warnings")
struct WarningsTests {
    let note: [UInt8] = [0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40]

    @Test("a format 0 file with two tracks plays them together and says so")
    func formatZeroWithTwoTracks() throws {
        let song = try MIDIFileReader.read(SMF.file(format: 0, tracks: [note + SMF.endOfTrack, note + SMF.endOfTrack]))
        #expect(song.events.count == 4)
        #expect(song.durationSeconds == 0.5)
        #expect(song.warnings.map(\.description) == ["byte 8: format 0 file declares 2 tracks; playing them together as format 1"])
    }

    @Test("a clean file has no warnings")
    func cleanFile() throws {
        #expect(try MIDIFileReader.read(SMF.file(tracks: [note + SMF.endOfTrack])).warnings.isEmpty)
    }

    @Test("warnings stop at the limit and the rest are counted, so millions of stray bytes cost nothing")
    func warningCap() throws {
        let strayClocks = [UInt8](repeating: 0, count: 10).flatMap { _ in [UInt8](arrayLiteral: 0x00, 0xF8) }
        let bytes = SMF.file(tracks: [strayClocks + note + SMF.endOfTrack])
        let song = try MIDIFileReader.read(bytes, limits: MIDIReadLimits(maxWarnings: 3))
        #expect(song.warnings.count == 4)
        #expect(song.warnings.last?.description == "byte \(bytes.count): 7 more warnings not listed")
        #expect(song.events.count == 2)
    }

    @Test("an End of Track event with data is rejected: its length must be 0")
    func endOfTrackWithData() {
        #expect(readError(SMF.file(tracks: [note + [0x00, 0xFF, 0x2F, 0x01, 0x00]]))?.description
            == "byte 31: meta event 0x2F has length 1; it must be 0")
    }

    @Test("the SMPTE offset meta event is kept in the file but adds no silence")
    func smpteOffsetIgnoredForTiming() throws {
        let offset: [UInt8] = [0x00, 0xFF, 0x54, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00]
        let file = try MIDIFileReader.parse(SMF.file(tracks: [offset + note + SMF.endOfTrack]))
        #expect(file.tracks[0].events[0].kind == .meta(type: MIDIMetaType.smpteOffset, data: [0x00, 0x01, 0x00, 0x00, 0x00]))
        let song = try MIDISong(file)
        #expect(song.times == [0, 0.5])
    }
}
