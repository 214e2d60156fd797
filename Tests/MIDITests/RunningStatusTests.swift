import MIDI
import Testing

@Suite("Running status")
struct RunningStatusTests {
    /// Two notes under running status 0x90, split by `interruption` (delta time included).
    func scale(interruptedBy interruption: [UInt8]) -> [UInt8] {
        SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x60, 0x3C, 0x00] + interruption + [0x00, 0x3E, 0x64, 0x60, 0x3E, 0x00] + SMF.endOfTrack])
    }

    let expectedNotes: [MIDIMessage] = [
        .noteOn(channel: 0, key: 60, velocity: 100), .noteOn(channel: 0, key: 60, velocity: 0),
        .noteOn(channel: 0, key: 62, velocity: 100), .noteOn(channel: 0, key: 62, velocity: 0),
    ]

    @Test("data bytes after a channel message reuse its status")
    func plainRunningStatus() throws {
        let song = try MIDIFileReader.read(scale(interruptedBy: []))
        #expect(song.messages == expectedNotes)
        #expect(song.times == [0, 0.5, 0.5, 1.0])
    }

    @Test("running status continues across a meta event by default, with a warning")
    func acrossMetaEvent() throws {
        let bytes = scale(interruptedBy: [0x00, 0xFF, 0x01, 0x05] + Array("break".utf8))
        let file = try MIDIFileReader.parse(bytes)
        #expect(try MIDISong(file).messages == expectedNotes)
        #expect(file.warnings.count == 1)
        #expect(file.warnings[0].message.contains("running status 0x90 continues after the event at byte 30"))
    }

    @Test("running status continues across a sysex event by default")
    func acrossSysEx() throws {
        let song = try MIDIFileReader.read(scale(interruptedBy: [0x00, 0xF0, 0x05, 0x7E, 0x7F, 0x06, 0x01, 0xF7]))
        #expect(song.messages == [expectedNotes[0], expectedNotes[1], .systemExclusive([0x7E, 0x7F, 0x06, 0x01]),
                                  expectedNotes[2], expectedNotes[3]])
    }

    @Test("under the strict policy a meta event cancels running status and the next data byte is an error")
    func strictMetaCancels() {
        let bytes = scale(interruptedBy: [0x00, 0xFF, 0x01, 0x01, 0x41])
        #expect(readError(bytes, runningStatus: .cancelledByNonChannelEvents)?.description
            == "byte 35: data byte 0x3E with no status byte before it (no running status to apply)")
    }

    @Test("under the strict policy a sysex event cancels running status too")
    func strictSysExCancels() {
        let bytes = scale(interruptedBy: [0x00, 0xF0, 0x01, 0xF7])
        #expect(readError(bytes, runningStatus: .cancelledByNonChannelEvents)?.kind == .dataByteWithoutStatus(0x3E))
    }

    @Test("a real-time byte never cancels running status, even under the strict policy")
    func realTimeKeepsStatus() throws {
        let song = try MIDIFileReader.read(scale(interruptedBy: [0x00, 0xF8]), runningStatus: .cancelledByNonChannelEvents)
        #expect(song.messages == expectedNotes)
    }

    @Test("a data byte at the start of a track has no status to run on")
    func dataByteFirst() {
        #expect(readError(SMF.file(tracks: [[0x00, 0x3C, 0x64] + SMF.endOfTrack]))?.description
            == "byte 23: data byte 0x3C with no status byte before it (no running status to apply)")
    }

    @Test("running status does not leak from one track into the next")
    func perTrack() {
        let bytes = SMF.file(format: 1, tracks: [[0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack, [0x00, 0x3C, 0x00] + SMF.endOfTrack])
        #expect(readError(bytes)?.kind == .dataByteWithoutStatus(0x3C))
    }

    @Test("every channel message kind decodes, with one- and two-data-byte lengths under running status")
    func allChannelMessages() throws {
        let body: [UInt8] = [
            0x00, 0x81, 0x3C, 0x40, 0x00, 0x92, 0x3C, 0x64, 0x00, 0xA3, 0x3C, 0x10, 0x00, 0xB4, 0x07, 0x64,
            0x00, 0xC5, 0x05, 0x00, 0x06, 0x00, 0xD6, 0x30, 0x00, 0xE7, 0x00, 0x40, 0x00, 0x7F, 0x7F,
        ]
        let song = try MIDIFileReader.read(SMF.file(tracks: [body + SMF.endOfTrack]))
        #expect(song.messages == [
            .noteOff(channel: 1, key: 60, velocity: 64), .noteOn(channel: 2, key: 60, velocity: 100),
            .polyPressure(channel: 3, key: 60, pressure: 16), .controlChange(channel: 4, controller: 7, value: 100),
            .programChange(channel: 5, program: 5), .programChange(channel: 5, program: 6),
            .channelPressure(channel: 6, pressure: 48), .pitchBend(channel: 7, value: 8192), .pitchBend(channel: 7, value: 16383),
        ])
    }

    @Test("a status byte where a data byte belongs is an error naming the message")
    func statusInsideMessage() {
        #expect(readError(SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x90] + SMF.endOfTrack]))?.description
            == "byte 25: expected a data byte (0-127) in a note-on message but found 0x90")
    }
}
