@testable import AsyncSignals
import AsyncSignals
@testable import BlueZ
import Clocks
@testable import Daemon
import Synchronization
import TestSupport
import Testing

@Suite("Scan-and-pick ranking")
struct CandidateRankingTests {
    func candidate(_ last: String, rssi: Int?, known: Int? = nil, trusted: Bool = false, sink: Bool = true) -> RankedCandidate {
        RankedCandidate(address: try! BluetoothAddress("11:22:33:44:55:\(last)"), name: "dev \(last)",
                        rssi: rssi, knownRank: known, trusted: trusted, audioSink: sink)
    }

    @Test("known beats trusted beats strongest signal, and non-sinks come last")
    func ordering() {
        let ranked = CandidateRanking.ranked([
            candidate("01", rssi: -30),
            candidate("02", rssi: -80, trusted: true),
            candidate("03", rssi: -90, known: 1),
            candidate("04", rssi: -95, known: 0),
            candidate("05", rssi: -10, sink: false),
            candidate("06", rssi: nil),
        ])
        #expect(ranked.map(\.name) == ["dev 04", "dev 03", "dev 02", "dev 01", "dev 06", "dev 05"])
    }

    @Test("auto-pick never picks something that is not a speaker")
    func autoPickOnlySinks() {
        #expect(CandidateRanking.autoPick(from: [candidate("05", rssi: -10, sink: false)]) == nil)
        #expect(CandidateRanking.autoPick(from: [candidate("05", rssi: -10, sink: false), candidate("01", rssi: -70)])?.name == "dev 01")
    }

    @Test("the scan report marks known speakers, best first")
    func report() {
        let report = CandidateRanking.report([candidate("01", rssi: -30), candidate("04", rssi: -95, known: 0)])
        #expect(report.candidates.map(\.address) == ["11:22:33:44:55:04", "11:22:33:44:55:01"])
        #expect(report.candidates.map(\.known) == [true, false])
    }
}
