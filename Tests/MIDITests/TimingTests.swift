import MIDI
import Testing

@Suite("Timing: tempo map, SMPTE and formats")
struct TimingTests {
    /// Note on, then note off `ticks` later, at key 60 on `channel`.
    func note(channel: UInt8 = 0, delta: UInt8 = 0, ticks: UInt8 = 96) -> [UInt8] {
        [delta, 0x90 | channel, 0x3C, 0x64, ticks, 0x80 | channel, 0x3C, 0x40]
    }

    @Test("without a tempo event a quarter note lasts 0.5 s (120 bpm)")
    func defaultTempo() throws {
        let song = try MIDIFileReader.read(SMF.file(tracks: [note() + note() + SMF.endOfTrack]))
        #expect(song.times == [0, 0.5, 0.5, 1.0])
        #expect(song.durationSeconds == 1.0)
    }

    @Test("a tempo change mid-song gives exact seconds before and after it")
    func tempoChangeMidSong() throws {
        // Quarter = 0.5 s, then from tick 96 a quarter = 1 s (60 bpm), then from tick 192 0.25 s.
        let body = note() + SMF.tempo(1_000_000) + note() + SMF.tempo(250_000) + note() + SMF.endOfTrack
        let song = try MIDIFileReader.read(SMF.file(tracks: [body]))
        #expect(song.times == [0, 0.5, 0.5, 1.5, 1.5, 1.75])
        #expect(song.durationSeconds == 1.75)
    }

    @Test("a tempo change between two ticks applies from its own tick")
    func tempoChangeInsideANote() throws {
        // Note on at 0, tempo halves at tick 48, note off at 96: 0.25 s + 0.5 s.
        let body: [UInt8] = [0x00, 0x90, 0x3C, 0x64] + SMF.tempo(1_000_000, delta: [0x30]) + [0x30, 0x80, 0x3C, 0x40] + SMF.endOfTrack
        let song = try MIDIFileReader.read(SMF.file(tracks: [body]))
        #expect(song.times == [0, 0.75])
    }

    @Test("the duration includes a late End of Track")
    func durationIncludesEndOfTrack() throws {
        let song = try MIDIFileReader.read(SMF.file(tracks: [note() + [0x81, 0x40, 0xFF, 0x2F, 0x00]]))
        #expect(song.events.last?.seconds == 0.5)
        #expect(song.durationSeconds == 1.5)
    }

    @Test("a tempo of 0 or a tempo event of the wrong length is rejected")
    func badTempo() {
        #expect(readError(SMF.file(tracks: [SMF.tempo(0) + SMF.endOfTrack]))?.description
            == "byte 23: tempo of 0 microseconds per quarter note")
        #expect(readError(SMF.file(tracks: [[0x00, 0xFF, 0x51, 0x02, 0x07, 0xA1] + SMF.endOfTrack]))?.description
            == "byte 23: meta event 0x51 has length 2; it must be 3")
    }

    @Test("format 1: the conductor track's tempo applies to every track")
    func formatOneSharedTempo() throws {
        let conductor = SMF.tempo(1_000_000) + SMF.endOfTrack
        let song = try MIDIFileReader.read(SMF.file(format: 1, tracks: [conductor, note(channel: 1) + SMF.endOfTrack]))
        #expect(song.times == [0, 1.0])
        #expect(song.durationSeconds == 1.0)
    }

    @Test("format 1: a tempo event in a later track still applies globally")
    func formatOneTempoInLaterTrack() throws {
        let song = try MIDIFileReader.read(SMF.file(format: 1, tracks: [note(channel: 0) + SMF.endOfTrack,
                                                                       SMF.tempo(250_000) + SMF.endOfTrack]))
        #expect(song.times == [0, 0.25])
    }

    @Test("format 1: simultaneous events keep track order, then file order")
    func formatOneStableMerge() throws {
        let song = try MIDIFileReader.read(SMF.file(format: 1, tracks: [note(channel: 0) + SMF.endOfTrack,
                                                                       note(channel: 1) + SMF.endOfTrack]))
        #expect(song.messages == [
            .noteOn(channel: 0, key: 60, velocity: 100), .noteOn(channel: 1, key: 60, velocity: 100),
            .noteOff(channel: 0, key: 60, velocity: 64), .noteOff(channel: 1, key: 60, velocity: 64),
        ])
    }

    @Test("format 2: tracks play one after another, each with its own tempo map")
    func formatTwoSequential() throws {
        let first = SMF.tempo(1_000_000) + note() + SMF.endOfTrack      // 1 s
        let second = note(ticks: 48) + SMF.endOfTrack                    // default tempo: 0.25 s
        let song = try MIDIFileReader.read(SMF.file(format: 2, tracks: [first, second]))
        #expect(song.times == [0, 1.0, 1.0, 1.25])
        #expect(song.durationSeconds == 1.25)
    }

    @Test("format 2: a track's End of Track, not its last note, decides when the next starts")
    func formatTwoEndOfTrack() throws {
        let first = note() + [0x60, 0xFF, 0x2F, 0x00]                    // note until 0.5 s, track until 1 s
        let song = try MIDIFileReader.read(SMF.file(format: 2, tracks: [first, note() + SMF.endOfTrack]))
        #expect(song.times == [0, 0.5, 1.0, 1.5])
    }

    @Test("SMPTE 25 fps with 40 ticks per frame makes a tick one millisecond, whatever the tempo")
    func smpte25() throws {
        let division: UInt16 = UInt16(UInt8(bitPattern: -25)) << 8 | 40
        let body = SMF.tempo(1_000_000) + [0x00, 0x90, 0x3C, 0x64, 0x87, 0x68, 0x80, 0x3C, 0x40] + SMF.endOfTrack  // 1000 ticks
        let song = try MIDIFileReader.read(SMF.file(division: division, tracks: [body]))
        #expect(song.times == [0, 1.0])
        let file = try MIDIFileReader.parse(SMF.file(division: division, tracks: [body]))
        #expect(file.division == .smpte(framesPerSecond: .fps25, ticksPerFrame: 40))
    }

    @Test("SMPTE 24 and 30 fps, and 29 meaning 29.97 drop frame")
    func smpteRates() throws {
        for (fps, ticksForOneSecond, expected) in [(24, 24, 1.0), (30, 30, 1.0), (29, 30, 1.001)] {
            let division = UInt16(UInt8(bitPattern: Int8(-fps))) << 8 | 1
            let body: [UInt8] = [0x00, 0x90, 0x3C, 0x64, UInt8(ticksForOneSecond), 0x80, 0x3C, 0x40] + SMF.endOfTrack
            let song = try MIDIFileReader.read(SMF.file(division: division, tracks: [body]))
            #expect(abs(song.durationSeconds - expected) < 1e-12, "\(fps) fps")
        }
    }

    @Test("an SMPTE rate other than 24, 25, 29 or 30, or 0 ticks per frame, is rejected")
    func badSMPTE() {
        let minus23 = UInt16(UInt8(bitPattern: -23)) << 8 | 4
        #expect(readError(SMF.file(division: minus23, tracks: [SMF.endOfTrack]))?.description
            == "byte 12: invalid time division: 23 SMPTE frames per second (must be 24, 25, 29 or 30)")
        let zeroTicks = UInt16(UInt8(bitPattern: -25)) << 8
        #expect(readError(SMF.file(division: zeroTicks, tracks: [SMF.endOfTrack]))?.description
            == "byte 13: invalid time division: 0 ticks per SMPTE frame")
    }

    @Test("the tempo map converts ticks to seconds on its own")
    func tempoMapDirectly() {
        let map = MIDITempoMap(division: .ticksPerQuarterNote(480), changes: [(960, 250_000), (480, 1_000_000)])
        #expect(map.seconds(atTick: 0) == 0)
        #expect(map.seconds(atTick: 480) == 0.5)
        #expect(map.seconds(atTick: 720) == 1.0)
        #expect(map.seconds(atTick: 960) == 1.5)
        #expect(map.seconds(atTick: 1440) == 1.75)
    }
}
