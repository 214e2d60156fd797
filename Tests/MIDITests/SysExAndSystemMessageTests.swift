import MIDI
import Testing

@Suite("System exclusive and system messages")
struct SysExAndSystemMessageTests {
    @Test("a complete F0 sysex reaches the song without its F0 and F7")
    func completeSysEx() throws {
        let song = try MIDIFileReader.read(SMF.file(tracks: [[0x00, 0xF0, 0x05, 0x7E, 0x7F, 0x09, 0x01, 0xF7] + SMF.endOfTrack]))
        #expect(song.messages == [.systemExclusive([0x7E, 0x7F, 0x09, 0x01])])
    }

    @Test("a sysex split into F0 and F7 continuation packets is joined, timed at its last packet")
    func dividedSysEx() throws {
        let body: [UInt8] = [0x00, 0xF0, 0x03, 0x43, 0x12, 0x00, 0x60, 0xF7, 0x03, 0x43, 0x12, 0xF7] + SMF.endOfTrack
        let song = try MIDIFileReader.read(SMF.file(tracks: [body]))
        #expect(song.messages == [.systemExclusive([0x43, 0x12, 0x00, 0x43, 0x12])])
        #expect(song.times == [0.5])
    }

    @Test("an F7 escape outside a sysex is kept in the file but only a whole sysex inside it is played")
    func escapes() throws {
        let body: [UInt8] = [0x00, 0xF7, 0x01, 0xF8, 0x00, 0xF7, 0x04, 0xF0, 0x41, 0x10, 0xF7] + SMF.endOfTrack
        let bytes = SMF.file(tracks: [body])
        let file = try MIDIFileReader.parse(bytes)
        #expect(file.tracks[0].events.map(\.kind).prefix(2) == [.escape([0xF8]), .escape([0xF0, 0x41, 0x10, 0xF7])])
        #expect(try MIDISong(file).messages == [.systemExclusive([0x41, 0x10])])
    }

    @Test("a sysex never closed by F7 is dropped with a warning, not sent half-done")
    func unterminatedSysEx() throws {
        let file = try MIDIFileReader.parse(SMF.file(tracks: [[0x00, 0xF0, 0x02, 0x7E, 0x7F] + SMF.endOfTrack]))
        #expect(try MIDISong(file).events.isEmpty)
        #expect(file.warnings.map(\.description) == ["byte 23: dropped a system-exclusive message that never reached its closing F7"])
    }

    @Test("system messages with a defined length are skipped with their data and the rest plays")
    func definedSystemMessagesSkipped() throws {
        for (status, data) in [(0xF1, [0x7F]), (0xF2, [0x7F, 0x7F]), (0xF3, [0x05]), (0xF6, []), (0xF8, []), (0xF9, []),
                               (0xFA, []), (0xFB, []), (0xFC, []), (0xFD, []), (0xFE, [])] as [(UInt8, [UInt8])] {
            let body = [0x00, status] + data + [0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40] + SMF.endOfTrack
            let file = try MIDIFileReader.parse(SMF.file(tracks: [body]))
            #expect(file.tracks[0].events.first?.kind == .ignoredSystemMessage(status: status, data: data))
            #expect(try MIDISong(file).messages == [.noteOn(channel: 0, key: 60, velocity: 100), .noteOff(channel: 0, key: 60, velocity: 64)])
            #expect(file.warnings.count == 1)
        }
    }

    @Test("undefined system common messages F4 and F5 are rejected at their offset")
    func undefinedSystemCommonRejected() {
        for status: UInt8 in [0xF4, 0xF5] {
            let bytes = SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x00, status, 0x00, 0x3C, 0x00] + SMF.endOfTrack])
            #expect(readError(bytes)?.description
                == "byte 27: undefined system message \(status == 0xF4 ? "0xF4" : "0xF5"): its length is unknown, so the rest of the track cannot be read")
        }
    }

    @Test("a system message whose data byte is a status byte is an error")
    func systemMessageBadData() {
        #expect(readError(SMF.file(tracks: [[0x00, 0xF2, 0x01, 0x90] + SMF.endOfTrack]))?.description
            == "byte 25: expected a data byte (0-127) in system message 0xF2 but found 0x90")
    }
}
