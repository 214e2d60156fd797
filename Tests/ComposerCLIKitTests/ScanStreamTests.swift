@testable import ComposerCLIKit
import SpeakerdAPI
import Testing

/// `composer-cli scan` piped: a line per device as speakerd hears it, then what the answer adds.
/// (PersonSessionTests runs the real one against speakerd and a fake BlueZ.)
@Suite("Scan output when piped")
struct ScanStreamTests {
    static let flip = ScanReport.Candidate(address: "11:22:33:44:55:66", name: "JBL Flip 5", rssi: -50, known: true, audioSink: true)
    static let bose = ScanReport.Candidate(address: "22:33:44:55:66:77", name: "Bose Mini", rssi: -70, known: false, audioSink: true)
    static let phone = ScanReport.Candidate(address: "AA:BB:CC:DD:EE:FF", name: "Somebody's phone", rssi: -40, known: false, audioSink: false)

    @Test("each speaker is printed once, when first announced, a speaker BlueZ already knew at once too; a louder signal later prints nothing; the answer closes with what was left out")
    func speakersAsTheyAreHeard() {
        var stream = ScanStream(showAll: false)
        var unheardBose = Self.bose
        unheardBose.rssi = nil
        var unheardOther = ScanReport.Candidate(address: "33:44:55:66:77:88", name: "UE Boom", rssi: nil, known: false, audioSink: true)
        // The first announcement: the Flip is heard, the Bose is only remembered by BlueZ: both
        // are printed now, not the Bose at the end of a five-second scan.
        #expect(stream.lines(announced: ScanReport(candidates: [unheardBose, Self.flip, Self.phone]))
                == ["11:22:33:44:55:66  JBL Flip 5  -50 dBm  known", "22:33:44:55:66:77  Bose Mini  —"])
        var louder = Self.flip
        louder.rssi = -30
        #expect(stream.lines(announced: ScanReport(candidates: [louder, unheardBose, Self.phone])) == [])
        #expect(stream.lines(announced: ScanReport(candidates: [louder, Self.bose, Self.phone])) == [])
        unheardOther.rssi = -60
        #expect(stream.lines(announced: ScanReport(candidates: [louder, Self.bose, unheardOther, Self.phone]))
                == ["33:44:55:66:77:88  UE Boom  -60 dBm"])
        #expect(stream.lines(finishedWith: ScanReport(candidates: [louder, Self.bose, unheardOther, Self.phone])) == ["(1 not shown: --all)"])
    }

    @Test("what no announcement carried comes with the answer, best first; with --all the phone too, marked")
    func theAnswerAddsTheRest() {
        var stream = ScanStream(showAll: true)
        var unheardBose = Self.bose
        unheardBose.rssi = nil
        #expect(stream.lines(finishedWith: ScanReport(candidates: [Self.flip, unheardBose, Self.phone])) == [
            "11:22:33:44:55:66  JBL Flip 5  -50 dBm  known",
            "22:33:44:55:66:77  Bose Mini  —",
            "AA:BB:CC:DD:EE:FF  Somebody's phone  -40 dBm  not a speaker",
        ])
    }

    @Test("a scan that heard no speaker says so in one line, and counts the other devices")
    func nothingFound() {
        var quiet = ScanStream(showAll: false)
        #expect(quiet.lines(finishedWith: ScanReport(candidates: [])) == ["No speakers found. Is the speaker on and in pairing mode?"])
        var phoneOnly = ScanStream(showAll: false)
        #expect(phoneOnly.lines(announced: ScanReport(candidates: [Self.phone])) == [])
        #expect(phoneOnly.lines(finishedWith: ScanReport(candidates: [Self.phone]))
                == ["No speakers found. Is the speaker on and in pairing mode? (1 other device found; --all lists it)"])
    }
}
