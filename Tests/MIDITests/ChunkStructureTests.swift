import MIDI
import Testing

@Suite("Chunk structure")
struct ChunkStructureTests {
    let scale = [UInt8]([0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40]) + SMF.endOfTrack

    @Test("an empty file is rejected as empty")
    func emptyFile() {
        #expect(readError([])?.description == "file is empty")
    }

    @Test("a text file is rejected naming what it starts with")
    func textFile() {
        #expect(readError(Array("hello world".utf8))?.description == "byte 0: not a MIDI file: starts with 'hell' instead of 'MThd'")
    }

    @Test("a header longer than 6 bytes has its extra bytes skipped")
    func longHeader() throws {
        let header = Array("MThd".utf8) + SMF.be32(8) + [0, 0, 0, 1, 0, 96, 0xAA, 0xBB]
        let song = try MIDIFileReader.read(header + SMF.chunk("MTrk", scale))
        #expect(song.messages == [.noteOn(channel: 0, key: 60, velocity: 100), .noteOff(channel: 0, key: 60, velocity: 64)])
    }

    @Test("a header shorter than 6 bytes is rejected")
    func shortHeader() {
        let bytes = Array("MThd".utf8) + SMF.be32(4) + [0, 0, 0, 1] + SMF.chunk("MTrk", scale)
        #expect(readError(bytes)?.description == "byte 4: MThd header is 4 bytes long; it must be at least 6")
    }

    @Test("a header cut off by the end of the file is truncated")
    func truncatedHeader() {
        let bytes = Array("MThd".utf8) + SMF.be32(6) + [0, 0]
        #expect(readError(bytes)?.description == "byte 0: truncated: the MThd header ends at byte 10 but its chunk says 14")
    }

    @Test("format 3 and zero tracks are rejected")
    func badHeaderFields() {
        #expect(readError(SMF.header(format: 3) + SMF.chunk("MTrk", scale))?.description
            == "byte 8: MIDI file format 3 is not one of 0, 1 or 2")
        #expect(readError(SMF.header(tracks: 0))?.description == "byte 10: the header declares no tracks")
    }

    @Test("a zero PPQ division is rejected")
    func zeroDivision() {
        #expect(readError(SMF.file(division: 0, tracks: [scale]))?.description
            == "byte 12: invalid time division: 0 ticks per quarter note")
    }

    @Test("unknown chunks before and between tracks are skipped")
    func unknownChunks() throws {
        let bytes = SMF.header(format: 1, tracks: 2) + SMF.chunk("Junk", Array("not a track".utf8)) + SMF.chunk("MTrk", scale)
            + SMF.chunk("XYZW", []) + SMF.chunk("MTrk", scale)
        let file = try MIDIFileReader.parse(bytes)
        #expect(file.tracks.count == 2)
        #expect(file.warnings.isEmpty)
        #expect(try MIDISong(file).events.count == 4)
    }

    @Test("a track chunk longer than the file is truncated, naming both ends")
    func trackPastEndOfFile() {
        var bytes = SMF.file(tracks: [scale])
        bytes.removeLast(3)
        #expect(readError(bytes)?.description == "byte 14: truncated: track 1 ends at byte \(bytes.count) but its chunk says \(bytes.count + 3)")
    }

    @Test("the second track's chunk running past the end names track 2")
    func secondTrackTruncated() {
        var bytes = SMF.file(format: 1, tracks: [scale, scale])
        bytes.removeLast()
        let secondChunk = 14 + 8 + scale.count
        #expect(readError(bytes)?.description
            == "byte \(secondChunk): truncated: track 2 ends at byte \(bytes.count) but its chunk says \(bytes.count + 1)")
    }

    @Test("fewer track chunks than declared is an error")
    func missingTracks() {
        let bytes = SMF.header(format: 1, tracks: 3) + SMF.chunk("MTrk", scale)
        #expect(readError(bytes)?.description == "byte \(bytes.count): truncated: the header declares 3 tracks but the file holds 1")
    }

    @Test("bytes after the last declared track are ignored with a warning")
    func trailingBytes() throws {
        let file = try MIDIFileReader.parse(SMF.file(tracks: [scale]) + [0x2A, 0x2A])
        #expect(file.warnings.map(\.description) == ["byte \(14 + 8 + scale.count): ignored 2 bytes after the last declared track"])
    }

    @Test("a track without End of Track ends at its last event, with a warning")
    func missingEndOfTrack() throws {
        let body: [UInt8] = [0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40]
        let bytes = SMF.file(tracks: [body])
        let file = try MIDIFileReader.parse(bytes)
        #expect(file.tracks[0].endTick == 96)
        #expect(file.warnings.map(\.description) == ["byte \(bytes.count): track 1 has no End of Track event; it ends with its last event"])
        #expect(try MIDISong(file).durationSeconds == 0.5)
    }

    @Test("bytes after End of Track inside the chunk are ignored with a warning")
    func bytesAfterEndOfTrack() throws {
        let file = try MIDIFileReader.parse(SMF.file(tracks: [scale + [0x00, 0x90, 0x40, 0x40]]))
        #expect(file.tracks[0].events.count == 3)
        #expect(file.warnings.count == 1)
        #expect(file.warnings[0].message == "ignored 4 bytes after track 1's End of Track event")
    }

    @Test("an event cut off by the end of its chunk is an error, not a read into the next chunk")
    func eventPastChunkEnd() {
        let bytes = SMF.file(format: 1, tracks: [[0x00, 0x90, 0x3C], scale])
        #expect(readError(bytes)?.description == "byte \(SMF.firstEventOffset + 3): a note-on message runs past the end of track 1's chunk")
    }

    @Test("a meta event whose length runs past the chunk is an error")
    func metaPastChunkEnd() {
        let bytes = SMF.file(tracks: [[0x00, 0xFF, 0x01, 0x10, 0x41, 0x42]])
        #expect(readError(bytes)?.description == "byte \(SMF.firstEventOffset + 1): meta event 0x01 runs past the end of track 1's chunk")
    }

    @Test("track names become the song's title and track names")
    func trackNames() throws {
        let song = try MIDIFileReader.read(SMF.file(format: 1, tracks: [SMF.endOfTrack, SMF.name("Bass") + SMF.endOfTrack,
                                                                       SMF.name("Caf\u{E9}") + SMF.endOfTrack]))
        #expect(song.title == "Bass")
        #expect(song.trackNames == [nil, "Bass", "Café"])
    }

    @Test("a Latin-1 track name is decoded rather than dropped")
    func latin1Name() throws {
        let song = try MIDIFileReader.read(SMF.file(tracks: [[0x00, 0xFF, 0x03, 0x04, 0x43, 0x61, 0x66, 0xE9] + SMF.endOfTrack]))
        #expect(song.title == "Café")
    }
}
