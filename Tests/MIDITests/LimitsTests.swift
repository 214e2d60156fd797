import MIDI
import Testing

@Suite("Limits against hostile files")
struct LimitsTests {
    let note: [UInt8] = [0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40]

    @Test("a file larger than the size limit is refused before parsing")
    func fileSize() {
        let bytes = SMF.file(tracks: [note + SMF.endOfTrack])
        #expect(readError(bytes, limits: MIDIReadLimits(maxFileBytes: 20))?.description
            == "file size in bytes \(bytes.count) exceeds the limit of 20")
    }

    @Test("a header declaring more tracks than the limit is refused before reading them")
    func trackCount() {
        #expect(readError(SMF.header(format: 1, tracks: 2000))?.description == "byte 10: number of tracks 2000 exceeds the limit of 1024")
    }

    @Test("the event limit counts events over all tracks")
    func eventCount() {
        let bytes = SMF.file(format: 1, tracks: [note + SMF.endOfTrack, note + SMF.endOfTrack])
        // Three events per track (note on, note off, End of Track): the sixth is over a limit of 5.
        #expect(readError(bytes, limits: MIDIReadLimits(maxEvents: 5))?.kind == .limitExceeded(.events, value: 6, limit: 5))
        #expect(readError(bytes, limits: MIDIReadLimits(maxEvents: 6)) == nil)
    }

    @Test("a sysex larger than the limit is refused, joined packets included")
    func sysExSize() {
        let single = SMF.file(tracks: [[0x00, 0xF0, 0x05, 1, 2, 3, 4, 0xF7] + SMF.endOfTrack])
        #expect(readError(single, limits: MIDIReadLimits(maxSysExBytes: 4))?.description
            == "byte 23: system-exclusive message size in bytes 5 exceeds the limit of 4")
        let divided = SMF.file(tracks: [[0x00, 0xF0, 0x03, 1, 2, 3, 0x00, 0xF7, 0x02, 4, 0xF7] + SMF.endOfTrack])
        #expect(readError(divided, limits: MIDIReadLimits(maxSysExBytes: 4))?.kind == .limitExceeded(.sysExBytes, value: 5, limit: 4))
        #expect(readError(divided, limits: MIDIReadLimits(maxSysExBytes: 5)) == nil)
    }

    @Test("a song lasting longer than the duration limit is refused: huge delta times are a hang in disguise")
    func duration() {
        let bytes = SMF.file(tracks: [[0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0x2F, 0x00]])  // 0x0FFFFFFF ticks ≈ 16 days
        #expect(readError(bytes)?.description == "song duration in seconds 1398101 exceeds the limit of 86400")
    }

    @Test("the default limits are generous for real songs")
    func defaults() {
        #expect(MIDIReadLimits.default == MIDIReadLimits(maxFileBytes: 16 << 20, maxTracks: 1024, maxEvents: 4_000_000,
                                                         maxSysExBytes: 1 << 20, maxDurationSeconds: 86400))
    }
}
