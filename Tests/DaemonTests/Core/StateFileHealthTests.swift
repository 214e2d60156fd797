import CustomDump
@testable import Daemon
import PropertyBased
import Testing

/// "Speakers will not be remembered" and the retry of a failed write, as scenarios on the value.
@Suite("The state file's problem: said once, retried 5 s, 10 s, 20 s … once a minute, over once everything is written")
struct StateFileHealthTests {
    static let failure = "cannot write /var/lib/speakerd/.state.json.A1B2: Not a directory"

    static func at(_ seconds: Int) -> ErasedClock.Instant { ErasedClock.Instant(offset: .seconds(seconds)) }

    @Test("a failed write raises the problem once, in status and the journal; retries back off to a minute and say nothing; the one that works ends it")
    func retriedUntilItWorks() {
        var health = StateFileHealth()
        expectNoDifference(health.step(.writeFailed(Self.failure), now: Self.at(0)), [
            .log(.error, "speakers will not be remembered: \(Self.failure)"),
            .armRetry(deadline: Self.at(5)),
            .publishStatus,
        ])
        // Another failed write while the problem stands: the words are the latest, nothing is said.
        expectNoDifference(health.step(.writeFailed("cannot write …C3D4: Not a directory"), now: Self.at(1)), [])
        #expect(health.problem == "speakers will not be remembered: cannot write …C3D4: Not a directory")

        var now = 5, deadlines: [Int] = []
        for _ in 0..<6 {
            expectNoDifference(health.step(.retryDue(deadline: Self.at(now)), now: Self.at(now)), [.savePending])
            let effects = health.step(.retried(failure: Self.failure), now: Self.at(now))
            guard case .armRetry(let next)? = effects.first, effects.count == 1 else {
                Issue.record("a failed retry did not arm exactly the next one: \(effects)")
                return
            }
            now = Int(next.offset.components.seconds)
            deadlines.append(now)
        }
        #expect(deadlines == [15, 35, 75, 135, 195, 255], "the retry does not double from 5 s to a minute")

        expectNoDifference(health.step(.retryDue(deadline: Self.at(now)), now: Self.at(now)), [.savePending])
        expectNoDifference(health.step(.retried(failure: nil), now: Self.at(now)), [
            .log(.notice, "state directory writable again: known speakers are saved"),
            .publishStatus,
        ])
        #expect(health.problem == nil && !health.isRetryArmed)
    }

    @Test("a write that wrote nothing (an unchanged volume, a speaker not known) does not end the problem; one that saved everything does, and disarms the retry")
    func onlyASavedFileEndsIt() {
        var health = StateFileHealth()
        _ = health.step(.writeFailed(Self.failure), now: Self.at(0))
        expectNoDifference(health.step(.written(allSaved: false), now: Self.at(1)), [])
        #expect(health.problem != nil)
        expectNoDifference(health.step(.written(allSaved: true), now: Self.at(2)), [
            .log(.notice, "state directory writable again: known speakers are saved"),
            .cancelRetry,
            .publishStatus,
        ])
        expectNoDifference(health.step(.retryDue(deadline: Self.at(5)), now: Self.at(5)), [], "a disarmed retry ran")
        expectNoDifference(health.step(.written(allSaved: true), now: Self.at(6)), [], "said writable again twice")
    }

    @Test("winding down disarms the retry; a write failing after it arms none, and a retry answering after it arms no next")
    func stopArmsNothing() {
        var health = StateFileHealth()
        _ = health.step(.writeFailed(Self.failure), now: Self.at(0))
        _ = health.step(.retryDue(deadline: Self.at(5)), now: Self.at(5))
        expectNoDifference(health.step(.stop, now: Self.at(6)), [.cancelRetry])
        expectNoDifference(health.step(.retried(failure: Self.failure), now: Self.at(7)), [])
        expectNoDifference(health.step(.writeFailed(Self.failure), now: Self.at(8)), [])
        #expect(!health.isRetryArmed)
    }

    @Test("any order of writes, failures, timers and answers: one retry at most, armed in the future, status told exactly when the problem begins or ends, nothing armed once stopped")
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...5_999).array(of: 1...60)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var health = StateFileHealth()
            var now = 0, armed: ErasedClock.Instant?, stopped = false
            for code in codes {
                now += code % 7
                let instant = Self.at(now)
                let event: StateFileHealth.Event = switch code % 6 {
                case 0: .written(allSaved: code / 6 % 2 == 0)
                case 1: .writeFailed(Self.failure)
                case 2: .retryDue(deadline: code / 6 % 3 == 0 ? instant : (armed ?? instant))
                case 3: .retried(failure: code / 6 % 2 == 0 ? nil : Self.failure)
                case 4: code / 6 % 9 == 0 ? .stop : .written(allSaved: false)
                default: .writeFailed("another temporary file")
                }
                let hadProblem = health.problem != nil
                let effects = health.step(event, now: instant)
                if case .stop = event { stopped = true }
                if case .retryDue(let deadline) = event, deadline == armed, effects == [.savePending] { armed = nil }
                for effect in effects {
                    switch effect {
                    case .armRetry(let deadline):
                        #expect(armed == nil, "a second retry armed over the first")
                        #expect(deadline > instant && !stopped)
                        armed = deadline
                    case .cancelRetry:
                        armed = nil
                    case .savePending, .log:
                        break
                    case .publishStatus:
                        #expect(hadProblem != (health.problem != nil), "status told without the problem beginning or ending")
                    }
                }
                if hadProblem != (health.problem != nil) {
                    #expect(effects.contains(.publishStatus), "the problem began or ended and status was not told")
                }
                if stopped { #expect(!health.isRetryArmed) }
            }
        }
    }
}
