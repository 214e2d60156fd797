import BlueZ
import CustomDump
@testable import Daemon
import PropertyBased
@testable import SpeakerdAPI
import Testing

/// Scans sharing one discovery, as scenarios on the value: scans asked, timers fired and BlueZ's
/// answers in; discoveries, timers and each scan's one answer out.
@Suite("Scans share one discovery, and every scan is answered once, by its own end at the latest")
struct ScanSharingTests {
    static let flip = RankedCandidate(address: try! BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5", rssi: -50,
                                      knownRank: 0, trusted: true, audioSink: true)
    static let bose = RankedCandidate(address: try! BluetoothAddress("22:33:44:BB:CC:DD"), name: "Bose Mini", rssi: -60,
                                      knownRank: nil, trusted: false, audioSink: true)

    static func at(_ milliseconds: Int) -> ErasedClock.Instant { ErasedClock.Instant(offset: .milliseconds(milliseconds)) }

    /// 50 ms scans, as the daemon's in-process tests configure them.
    static func sharing() -> ScanSharing { ScanSharing(scanDuration: .milliseconds(50)) }

    @Test("sixteen scans asked together start one discovery; it stops at the first scan's end and all sixteen get its candidates")
    func sixteenShareOne() {
        var sharing = Self.sharing()
        expectNoDifference(sharing.step(.asked(1, duration: nil), now: Self.at(0)),
                           [.startDiscovery(run: 1), .arm(.discoveryEnd, deadline: Self.at(50))])
        for id in 2...16 { expectNoDifference(sharing.step(.asked(UInt64(id), duration: nil), now: Self.at(id)), []) }
        expectNoDifference(sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(50)), now: Self.at(50)), [.stopDiscovery(run: 1)])
        let answers = sharing.step(.discovered(run: 1, .success([Self.flip])), now: Self.at(52))
        expectNoDifference(answers, (1...16).map { .answer(UInt64($0), .success([Self.flip])) })
        #expect(!sharing.isDiscovering && sharing.unanswered.isEmpty)
    }

    @Test("a scan asked 30 ms into a 50 ms discovery answers at its end, 20 ms later, not a whole scan later")
    func aLateScanJoins() {
        var sharing = Self.sharing()
        _ = sharing.step(.asked(1, duration: nil), now: Self.at(0))
        expectNoDifference(sharing.step(.asked(2, duration: nil), now: Self.at(30)), [])
        _ = sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(50)), now: Self.at(50))
        #expect(sharing.step(.discovered(run: 1, .success([Self.flip])), now: Self.at(50)).contains(.answer(2, .success([Self.flip]))))
    }

    @Test("a scan asked while the discovery's candidates are read joins that answer; one asked after it starts a new discovery")
    func askedBetweenEndAndAnswer() {
        var sharing = Self.sharing()
        _ = sharing.step(.asked(1, duration: nil), now: Self.at(0))
        _ = sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(50)), now: Self.at(50))
        expectNoDifference(sharing.step(.asked(2, duration: .seconds(1)), now: Self.at(51)), [], "a stopping discovery was extended")
        expectNoDifference(sharing.step(.discovered(run: 1, .success([Self.flip])), now: Self.at(52)),
                           [.answer(1, .success([Self.flip])), .answer(2, .success([Self.flip]))])
        expectNoDifference(sharing.step(.asked(3, duration: nil), now: Self.at(53)),
                           [.startDiscovery(run: 2), .arm(.discoveryEnd, deadline: Self.at(103))])
    }

    @Test("a longer scan joining a short one keeps the discovery going: the short one answers at its own end with what is heard so far, the long one at its end")
    func aLongerScanExtends() {
        var sharing = Self.sharing()
        _ = sharing.step(.asked(1, duration: nil), now: Self.at(0))
        expectNoDifference(sharing.step(.asked(2, duration: .seconds(1)), now: Self.at(20)), [
            .arm(.discoveryEnd, deadline: Self.at(1_020)),
            .arm(.scanEnd(1), deadline: Self.at(50)),
        ])
        expectNoDifference(sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(50)), now: Self.at(50)), [], "the old end stopped it")
        expectNoDifference(sharing.step(.timerFired(.scanEnd(1), deadline: Self.at(50)), now: Self.at(50)), [.readCandidates(for: 1)])
        expectNoDifference(sharing.step(.candidatesRead(1, .success([Self.flip])), now: Self.at(51)), [.answer(1, .success([Self.flip]))])

        expectNoDifference(sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(1_020)), now: Self.at(1_020)), [.stopDiscovery(run: 1)])
        expectNoDifference(sharing.step(.discovered(run: 1, .success([Self.flip, Self.bose])), now: Self.at(1_021)),
                           [.answer(2, .success([Self.flip, Self.bose]))])
    }

    @Test("a scan of the configured length joining a longer one answers at its own end")
    func aShortScanJoiningALongOne() {
        var sharing = Self.sharing()
        _ = sharing.step(.asked(1, duration: .seconds(1)), now: Self.at(0))
        expectNoDifference(sharing.step(.asked(2, duration: nil), now: Self.at(100)), [.arm(.scanEnd(2), deadline: Self.at(150))])
        expectNoDifference(sharing.step(.timerFired(.scanEnd(2), deadline: Self.at(150)), now: Self.at(150)), [.readCandidates(for: 2)])
    }

    @Test("a scan whose caller leaves is answered cancelled at once, the others still get the candidates; when all have left the discovery stops")
    func leaving() {
        var sharing = Self.sharing()
        for id in 1...3 { _ = sharing.step(.asked(UInt64(id), duration: nil), now: Self.at(0)) }
        expectNoDifference(sharing.step(.left(1), now: Self.at(10)), [.answer(1, .failure(.cancelled))])
        expectNoDifference(sharing.step(.left(1), now: Self.at(11)), [], "answered twice")
        _ = sharing.step(.timerFired(.discoveryEnd, deadline: Self.at(50)), now: Self.at(50))
        expectNoDifference(sharing.step(.discovered(run: 1, .success([Self.flip])), now: Self.at(51)),
                           [.answer(2, .success([Self.flip])), .answer(3, .success([Self.flip]))])

        _ = sharing.step(.asked(4, duration: nil), now: Self.at(60))
        _ = sharing.step(.asked(5, duration: nil), now: Self.at(61))
        _ = sharing.step(.left(4), now: Self.at(62))
        expectNoDifference(sharing.step(.left(5), now: Self.at(63)),
                           [.answer(5, .failure(.cancelled)), .cancel(.discoveryEnd), .cancelDiscovery(run: 2)])
        expectNoDifference(sharing.step(.discovered(run: 2, .failure(.cancelled)), now: Self.at(64)), [], "a cancelled discovery answered")
    }

    @Test("a discovery that cannot start or fails answers every scan with why; speakerd winding down answers every scan cancelled")
    func failures() {
        var sharing = Self.sharing()
        _ = sharing.step(.asked(1, duration: nil), now: Self.at(0))
        _ = sharing.step(.asked(2, duration: nil), now: Self.at(1))
        let notReady = ScanSharing.Failure.notReady(.rejected(name: SpeakerdBus.ErrorName.notReady, message: "no Bluetooth adapter"))
        expectNoDifference(sharing.step(.discovered(run: 1, .failure(notReady)), now: Self.at(2)),
                           [.cancel(.discoveryEnd), .answer(1, .failure(notReady)), .answer(2, .failure(notReady))])

        _ = sharing.step(.asked(3, duration: .seconds(1)), now: Self.at(10))
        _ = sharing.step(.asked(4, duration: nil), now: Self.at(11))
        expectNoDifference(sharing.step(.stop, now: Self.at(12)), [
            .cancelDiscovery(run: 2), .cancel(.discoveryEnd),
            .answer(3, .failure(.cancelled)), .cancel(.scanEnd(4)), .answer(4, .failure(.cancelled)),
        ])
        expectNoDifference(sharing.step(.asked(5, duration: nil), now: Self.at(13)), [.answer(5, .failure(.cancelled))])
    }

    @Test("while a discovery runs, a device changing announces the list when it changed; without a discovery nothing is read")
    func announcements() {
        var sharing = Self.sharing()
        expectNoDifference(sharing.step(.deviceChanged, now: Self.at(0)), [])
        _ = sharing.step(.asked(1, duration: nil), now: Self.at(0))
        expectNoDifference(sharing.step(.deviceChanged, now: Self.at(1)), [.readAnnouncement])
        expectNoDifference(sharing.step(.announcementRead([]), now: Self.at(2)), [], "nothing found yet is no news")
        expectNoDifference(sharing.step(.announcementRead([Self.flip]), now: Self.at(3)), [.announce(CandidateRanking.report([Self.flip]))])
        expectNoDifference(sharing.step(.announcementRead([Self.flip]), now: Self.at(4)), [], "the same list announced twice")
    }

    @Test("any order of scans, leaves, timers and BlueZ's answers: every scan answered exactly once and never left past its end without a way to be answered, one discovery at a time, no timer armed for a discovery gone")
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...9_999).array(of: 1...60)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var sharing = Self.sharing()
            var now = 0, next: UInt64 = 0
            var ends: [UInt64: Int] = [:], answered: Set<UInt64> = []
            var discovering: UInt64?, stopping = false, armed: [ScanSharing.Timer: Int] = [:]
            for code in codes {
                // Time moves on, but never past an armed timer that has not fired.
                now = armed.values.min().map { min(now + code % 7, max(now, $0)) } ?? now + code % 7
                let pending = ends.keys.filter { !answered.contains($0) }.sorted()
                let event: ScanSharing.Event
                switch code % 8 {
                case 0, 1:
                    next += 1
                    let length = code / 8 % 3 == 0 ? code % 400 + 1 : 50
                    ends[next] = now + length
                    event = .asked(next, duration: length == 50 && code / 8 % 3 != 0 ? nil : .milliseconds(length))
                case 2:
                    event = .left(pending.isEmpty ? 999 : pending[code / 8 % pending.count])
                case 3, 4:
                    // The earliest armed timer fires at its deadline: time never runs past one unfired.
                    guard let (timer, deadline) = armed.min(by: { $0.value < $1.value }) else { continue }
                    now = max(now, deadline)
                    armed[timer] = nil
                    event = .timerFired(timer, deadline: Self.at(deadline))
                case 5:
                    let answer: ScanSharing.Answer = code / 8 % 4 == 0 ? .failure(.discovery("org.bluez.Error.NotReady")) : .success([Self.flip])
                    event = .discovered(run: discovering ?? UInt64(code / 8 % 3), answer)
                case 6:
                    event = pending.isEmpty ? .deviceChanged : .candidatesRead(pending[code / 8 % pending.count], .success([]))
                default:
                    event = code / 8 % 20 == 0 ? .stop : .announcementRead(code / 8 % 2 == 0 ? [] : [Self.flip])
                }

                for effect in sharing.step(event, now: Self.at(now)) {
                    switch effect {
                    case .startDiscovery(let run):
                        #expect(discovering == nil, "a second discovery while one runs")
                        (discovering, stopping) = (run, false)
                    case .stopDiscovery(let run):
                        #expect(run == discovering && !stopping, "stopped a discovery that is not running")
                        stopping = true
                    case .cancelDiscovery(let run):
                        #expect(run == discovering, "cancelled a discovery that is not running")
                        discovering = nil
                    case let .arm(timer, deadline):
                        #expect(deadline >= Self.at(now), "armed for the past")
                        armed[timer] = Int(deadline.offset / .milliseconds(1))
                    case .cancel(let timer):
                        armed[timer] = nil
                    case let .answer(id, _):
                        #expect(ends[id] != nil, "answered a scan never asked")
                        #expect(!answered.contains(id), "scan \(id) answered twice")
                        answered.insert(id)
                    case .readCandidates, .readAnnouncement, .announce:
                        break
                    }
                }
                if case .discovered(let run, _) = event, run == discovering { discovering = nil }
                if !sharing.isDiscovering {
                    #expect(armed.isEmpty, "timers left armed with no discovery: \(armed)")
                    discovering = nil
                }
                #expect(sharing.armedTimers == Set(armed.keys), "the sharing and its effects disagree on the timers")
                // Every scan not answered yet has a way to be answered by its own end.
                for id in sharing.unanswered {
                    let end = ends[id] ?? 0
                    let timely = armed.values.contains { $0 <= end } || stopping || sharing.beingRead.contains(id)
                    #expect(timely, "scan \(id) (ending at \(end) ms) has nothing that answers it in time")
                }
                #expect(Set(ends.keys).subtracting(answered) == sharing.unanswered, "a scan dropped without an answer")
            }
        }
    }
}
