@testable import SpeakerdAPI
import Testing

/// The values `volume` and `SetVolume` take: a level, or a step that stops at the ends.
@Suite("Volume values: a level or a step")
struct VolumeChangeTests {
    @Test("N, +N and -N are read as a level or a step; a level past 0…100 or anything else is refused; steps stop at the ends",
          arguments: [
              ("40", VolumeChange.to(40)), ("0", .to(0)), ("100", .to(100)), ("+5", .by(5)), ("-5", .by(-5)), (" 7 ", .to(7)),
          ])
    func parsing(text: String, expected: VolumeChange) throws {
        #expect(try VolumeChange(parsing: text) == expected)
        #expect(try VolumeChange(parsing: expected.description) == expected)
    }

    @Test("malformed and out-of-range volumes are refused with a sentence that says what to give")
    func refusedValues() {
        #expect(throws: VolumeChangeError.outOfRange(101)) { try VolumeChange(parsing: "101") }
        for text in ["", "+", "-", "loud", "4.5", "1e2", "+-3", "0x10", "1000"] {
            #expect(throws: VolumeChangeError.malformed(text)) { try VolumeChange(parsing: text) }
        }
        #expect(VolumeChangeError.outOfRange(150).description == "volume 150 is out of range: give a percent from 0 to 100")
        #expect(VolumeChange.by(80).applied(to: 40) == 100)
        #expect(VolumeChange.by(-50).applied(to: 40) == 0)
    }
}
