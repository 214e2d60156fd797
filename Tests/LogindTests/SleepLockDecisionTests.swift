@testable import Logind
import PropertyBased
import Testing

/// When the sleep delay lock is held, as scenarios on the value: the queue's and logind's events
/// in; `Inhibit`, the release and the states observers see out.
@Suite("The sleep delay lock: held exactly while the queue is busy and the system is not preparing to sleep")
struct SleepLockDecisionTests {
    @Test("busy takes it, drained gives it back; a drain while Inhibit is in flight gives back the lock as soon as it comes")
    func busyAndDrained() {
        var decision = SleepLockDecision()
        #expect(decision.step(.queue(busy: true)) == [.announce(.acquiring), .acquire])
        #expect(decision.step(.acquired) == [.announce(.held), .log(.debug, "holding a sleep delay lock")])
        #expect(decision.step(.queue(busy: false)) == [.release, .announce(.idle), .log(.debug, "released the sleep delay lock (queue drained)")])

        _ = decision.step(.queue(busy: true))
        #expect(decision.step(.queue(busy: false)) == [], "a second Inhibit while one is in flight")
        #expect(decision.step(.acquired) == [.announce(.held), .log(.debug, "holding a sleep delay lock"),
                                              .release, .announce(.idle), .log(.debug, "released the sleep delay lock (queue drained)")])
    }

    @Test("preparing for sleep releases it; resume takes it again while the queue is still busy")
    func sleepAndResume() {
        var decision = SleepLockDecision()
        _ = decision.step(.queue(busy: true))
        _ = decision.step(.acquired)
        #expect(decision.step(.preparingForSleep(true)).contains(.release))
        #expect(decision.state == .idle)
        #expect(decision.step(.preparingForSleep(false)) == [.announce(.acquiring), .acquire])
    }

    @Test("without logind: unavailable, said once however often busy tries again; a lock taken in between makes a new outage news")
    func withoutLogind() {
        var decision = SleepLockDecision()
        var lines = 0
        for _ in 0..<5 {
            _ = decision.step(.queue(busy: true))
            lines += decision.step(.acquireFailed(reason: "logind is not running", logindMissing: true)).count { if case .log = $0 { true } else { false } }
            _ = decision.step(.queue(busy: false))
        }
        #expect(lines == 1)
        #expect(decision.state == .unavailable("logind is not running"))
        _ = decision.step(.queue(busy: true))
        _ = decision.step(.acquired)
        _ = decision.step(.queue(busy: false))
        _ = decision.step(.queue(busy: true))
        #expect(decision.step(.acquireFailed(reason: "logind is not running", logindMissing: true)).contains(
            .log(.info, "no logind on the bus: suspend will not wait for speaker operations")))
    }

    @Test("shutting down releases a held lock, and a lock that arrives after it is released at once; nothing is asked again")
    func shutdown() {
        var decision = SleepLockDecision()
        _ = decision.step(.queue(busy: true))
        _ = decision.step(.acquired)
        #expect(decision.step(.shutdown).contains(.release))
        #expect(decision.step(.queue(busy: true)) == [])

        var asking = SleepLockDecision()
        _ = asking.step(.queue(busy: true))
        #expect(asking.step(.shutdown) == [.announce(.idle)])
        #expect(asking.step(.acquired) == [.release])
        #expect(asking.state == .idle)
    }

    @Test("any order of events: the lock held exactly when the state says so, one Inhibit at a time, none after shutdown, every state change announced")
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...999).array(of: 1...60)) { codes in
            var decision = SleepLockDecision()
            var held = false, asking = false, stopped = false
            var seen = SleepInhibitor.State.idle
            for code in codes {
                let event: SleepLockDecision.Event
                switch code % 7 {
                case 0, 1: event = .queue(busy: code / 7 % 2 == 0)
                case 2: event = .preparingForSleep(code / 7 % 2 == 0)
                case 3, 4:
                    guard asking else { continue }
                    event = code % 7 == 3 ? .acquired : .acquireFailed(reason: "Access denied", logindMissing: code / 7 % 2 == 0)
                case 5: event = .queue(busy: true)
                default: event = code / 7 % 10 == 0 ? .shutdown : .preparingForSleep(false)
                }
                if case .acquired = event { (held, asking) = (true, false) }
                if case .acquireFailed = event { asking = false }
                if case .shutdown = event { stopped = true }
                for effect in decision.step(event) {
                    switch effect {
                    case .acquire:
                        #expect(!asking && !held && !stopped, "Inhibit asked while one is out, a lock is held, or after shutdown")
                        asking = true
                    case .release:
                        #expect(held, "released a lock not held")
                        held = false
                    case .announce(let state):
                        #expect(state != seen, "announced a state it was already in")
                        seen = state
                    case .log:
                        break
                    }
                }
                #expect(seen == decision.state, "a state change not announced")
                #expect(held == (decision.state == .held), "the lock and the state disagree")
            }
        }
    }
}
