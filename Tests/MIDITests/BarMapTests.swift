import MIDI
import Testing
import TestSupport

/// Bars and beats as a composer counts them, from the file's time signatures and tempo map.
@Suite("Bars and beats")
struct BarMapTests {
    /// A time signature meta event after `delta` ticks: `numerator`/2^`power`.
    static func timeSignature(_ numerator: UInt8, _ power: UInt8, delta: [UInt8] = [0x00]) -> [UInt8] {
        delta + [0xFF, 0x58, 0x04, numerator, power, 24, 8]
    }

    /// Format 1, 480 ticks a quarter: a conductor track with `conductor` events, and a piano
    /// track that holds one note until `endTick`.
    static func song(conductor: [UInt8], endTick: Int) throws -> MIDISong {
        let delta = vlq(endTick)
        let piano = SMF.name("Piano") + [0x00, 0x90, 60, 100] + delta + [0x80, 60, 0] + SMF.endOfTrack
        return try MIDIFileReader.read(SMF.file(format: 1, division: 480, tracks: [conductor + SMF.endOfTrack, piano]))
    }

    static func vlq(_ value: Int) -> [UInt8] { SMFBytes.variableLength(value) }

    @Test("with no time signature a song is in 4/4: bar 17 begins 64 quarters in, 32 s at 120 BPM")
    func defaultIsFourFour() throws {
        let song = try Self.song(conductor: [], endTick: 480 * 4 * 20)
        let bars = try #require(song.bars)
        #expect(bars.barCount == 20)
        #expect(try bars.seconds(of: MIDIBarPosition(bar: 17)) == 32)
        #expect(try bars.seconds(of: MIDIBarPosition(bar: 17, beat: 3)) == 33)
        #expect(bars.position(atSeconds: 33.25) == MIDIBarPosition(bar: 17, beat: 3, tick: 240))
        #expect(bars.meter(atSeconds: 0) == .fourFour)
    }

    @Test("a 3/4 waltz at 90 BPM that turns 6/8 at bar 5: bars and beats follow both meters and the tempo")
    func metersAndTempo() throws {
        // 3/4 from the start; 6/8 at tick 4 × 3 × 480 (bar 5); 90 quarter notes a minute.
        let conductor = SMF.tempo(666_667) + Self.timeSignature(3, 2) + Self.timeSignature(6, 3, delta: Self.vlq(4 * 3 * 480))
        let song = try Self.song(conductor: conductor, endTick: 4 * 3 * 480 + 4 * 6 * 240)
        let bars = try #require(song.bars)
        #expect(bars.barCount == 8)
        let quarter = 0.666667
        #expect(abs(try bars.seconds(of: MIDIBarPosition(bar: 2)) - 3 * quarter) < 1e-9)
        #expect(abs(try bars.seconds(of: MIDIBarPosition(bar: 5)) - 12 * quarter) < 1e-9)
        // In 6/8 a beat is an eighth: beat 4 of bar 5 is 1.5 quarters into it.
        #expect(abs(try bars.seconds(of: MIDIBarPosition(bar: 5, beat: 4)) - 13.5 * quarter) < 1e-9)
        #expect(bars.meter(atSeconds: 12 * quarter + 0.01) == MIDIMeter(numerator: 6, denominator: 8))
        #expect(abs(bars.quarterNotesPerMinute(atSeconds: 1) - 90) < 0.001)
        #expect(bars.position(atSeconds: 13.5 * quarter) == MIDIBarPosition(bar: 5, beat: 4))
    }

    @Test("a position that is not in the song is one clear error")
    func missingPositions() throws {
        let song = try Self.song(conductor: Self.timeSignature(3, 2), endTick: 480 * 3 * 4)
        let bars = try #require(song.bars)
        #expect(throws: MIDIPositionError.noSuchBar(9, bars: 4)) { try bars.tick(of: MIDIBarPosition(bar: 9)) }
        #expect(throws: MIDIPositionError.noSuchBeat(4, bar: 2, beats: 3)) { try bars.tick(of: MIDIBarPosition(bar: 2, beat: 4)) }
        #expect("\(MIDIPositionError.noSuchBar(9, bars: 4))" == "there is no bar 9: the song has 4 bars")
    }

    @Test("positions are written BAR[:BEAT[:TICK]] or in seconds with s; anything else is refused")
    func parsingPositions() throws {
        #expect(try MIDISongPosition(parsing: "17") == .bars(MIDIBarPosition(bar: 17)))
        #expect(try MIDISongPosition(parsing: "17:3") == .bars(MIDIBarPosition(bar: 17, beat: 3)))
        #expect(try MIDISongPosition(parsing: "17:3:120") == .bars(MIDIBarPosition(bar: 17, beat: 3, tick: 120)))
        #expect(try MIDISongPosition(parsing: "12.5s") == .seconds(12.5))
        for bad in ["", "x", "17:", ":3", "1:2:3:4", "-2", "nans", "-1s", "17.5"] {
            #expect(throws: MIDIPositionError.malformed(bad)) { try MIDISongPosition(parsing: bad) }
        }
    }

    @Test("a song built by hand or timed in SMPTE frames has no bars: a position in bars says so")
    func noBars() throws {
        let smpte = try MIDIFileReader.read(SMF.file(division: 0xE728, tracks: [[0x00, 0x90, 60, 100, 0x10, 0x80, 60, 0] + SMF.endOfTrack]))
        #expect(smpte.bars == nil)
        #expect(throws: MIDIPositionError.noBars) { try MIDISongPosition.bars(MIDIBarPosition(bar: 2)).seconds(in: smpte) }
        #expect(try MIDISongPosition.seconds(0.1).seconds(in: smpte) == 0.1)
    }

    @Test("each track's channels are known, for muting a part by its track name")
    func trackChannels() throws {
        let song = try Self.song(conductor: [], endTick: 480)
        #expect(song.trackNames == [nil, "Piano"])
        #expect(song.trackChannels == [[], [0]])
    }
}
