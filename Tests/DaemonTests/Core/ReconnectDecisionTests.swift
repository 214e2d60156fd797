import AsyncSignals
import CustomDump
@testable import Daemon
import PropertyBased
import Testing
import TestSupport

/// The reconnect decision's scenarios, with time in the test's hand: what starts, what is
/// armed, who is answered, and that nothing moves once the daemon stops.
@Suite("Reconnect decision scenarios")
struct ReconnectDecisionTests {
    typealias Decision = ReconnectDecision<ErasedClock>
    static let start = ErasedClock.Instant(offset: .zero)

    static func decision(seed: UInt64 = 7) -> Decision {
        Decision(policy: ReconnectPolicy(random: SplitMix64(seed: seed)))
    }

    /// The deadline of the one timer `effects` arm.
    static func armed(_ effects: [Decision.Effect]) -> ErasedClock.Instant? {
        effects.lazy.compactMap { if case .arm(let deadline) = $0 { deadline } else { nil } }.first
    }

    @Test("a speaker unreachable at boot: a retry is armed, and its firing starts the attempt; an earlier timer's firing does nothing")
    func retryStartsTheAttempt() throws {
        var decision = Self.decision()
        let first = decision.step(.policy(.unreachableAtBoot), now: Self.start)
        let deadline = try #require(Self.armed(first))
        #expect(first == [.tell(.retryScheduled(after: Self.start.duration(to: deadline))), .arm(deadline: deadline)])
        #expect(decision.step(.retryDue(deadline: Self.start.advanced(by: .milliseconds(1))), now: deadline) == [],
                "a firing for a deadline not armed is stale")
        expectNoDifference(decision.step(.retryDue(deadline: deadline), now: deadline), [.tell(.attempting), .start(.init(number: 1))])
        #expect(decision.armed == nil)
    }

    @Test("an awaited attempt: the retry armed is cancelled, and the caller is answered after the policy has taken the failure in")
    func awaitedAttemptIsAnswered() throws {
        var decision = Self.decision()
        _ = decision.step(.policy(.unreachableAtBoot), now: Self.start)
        let asked = Self.start.advanced(by: .milliseconds(100))
        expectNoDifference(decision.step(.connectNow(.init(1)), now: asked), [.cancelTimer, .tell(.attempting), .start(.init(number: 1))])
        let failed = decision.step(.attemptEnded(.init(number: 1), .failed(reason: "Page Timeout")), now: asked.advanced(by: .seconds(5)))
        let deadline = try #require(Self.armed(failed))
        expectNoDifference(failed, [.tell(.attemptFailed(reason: "Page Timeout")),
                                    .tell(.retryScheduled(after: asked.advanced(by: .seconds(5)).duration(to: deadline))),
                                    .arm(deadline: deadline), .answer(.init(1), .failed(reason: "Page Timeout"))])
    }

    @Test("a connect that succeeds after the user's disconnect ends no hold: its caller hears it, and nothing is retried")
    func userDisconnectOverrulesAnAttemptUnderWay() {
        var decision = Self.decision()
        _ = decision.step(.connectNow(.init(1)), now: Self.start)
        #expect(decision.step(.policy(.userDisconnected), now: Self.start) == [.tell(.holding)])
        #expect(decision.step(.attemptEnded(.init(number: 1), .connected), now: Self.start) == [.answer(.init(1), .connected)])
        #expect(decision.policy.state == .heldByUser)
        #expect(decision.step(.policy(.linkLost(.timeout)), now: Self.start) == [], "a retry undid the user's disconnect")
        // Their own ask lifts the hold.
        #expect(decision.step(.connectNow(.init(2)), now: Self.start) == [.tell(.attempting), .start(.init(number: 2))])
    }

    @Test("a pairing the speaker refused waits for the user: nothing is retried, and status says why")
    func pairingRefusedWaitsForTheUser() {
        var decision = Self.decision()
        _ = decision.step(.connectNow(.init(1)), now: Self.start)
        let refusal = "the speaker is not in pairing mode"
        expectNoDifference(decision.step(.attemptEnded(.init(number: 1), .pairingRefused(reason: refusal)), now: Self.start),
                           [.tell(.attemptFailed(reason: refusal)), .tell(.needsPairing(reason: refusal)), .answer(.init(1), .pairingRefused(reason: refusal))])
        #expect(decision.step(.policy(.deviceSeen), now: Self.start.advanced(by: .seconds(30))) == [])
    }

    @Test("a caller that leaves cancels its own attempt, not the policy's")
    func callerLeavingCancelsItsAttempt() throws {
        var decision = Self.decision()
        let first = decision.step(.policy(.unreachableAtBoot), now: Self.start)
        let deadline = try #require(Self.armed(first))
        _ = decision.step(.retryDue(deadline: deadline), now: deadline)
        #expect(decision.step(.connectNow(.init(1)), now: deadline) == [.tell(.attempting), .start(.init(number: 2))])
        #expect(decision.step(.callerLeft(.init(1)), now: deadline) == [.cancel(.init(number: 2))])
        #expect(decision.step(.callerLeft(.init(9)), now: deadline) == [], "no attempt of that caller")
    }

    @Test("stop: the attempts under way are cancelled and their callers answered, the timer goes, and nothing moves after")
    func stopLeavesNothingBehind() throws {
        var decision = Self.decision()
        _ = decision.step(.connectNow(.init(1)), now: Self.start)
        _ = decision.step(.attemptEnded(.init(number: 1), .failed(reason: "Page Timeout")), now: Self.start)
        _ = decision.step(.connectNow(.init(2)), now: Self.start)
        _ = decision.step(.policy(.linkLost(.timeout)), now: Self.start)
        let armed = try #require(decision.armed)
        expectNoDifference(decision.step(.stop, now: Self.start),
                           [.cancelTimer, .cancel(.init(number: 2)), .answer(.init(2), .failed(reason: "speakerd is stopping")), .endChanges])
        #expect(decision.step(.attemptEnded(.init(number: 2), .failed(reason: "cancelled")), now: Self.start) == [])
        #expect(decision.step(.retryDue(deadline: armed), now: armed) == [])
        #expect(decision.step(.policy(.deviceSeen), now: armed) == [])
        #expect(decision.step(.connectNow(.init(3)), now: armed) == [.answer(.init(3), .failed(reason: "speakerd is stopping"))])
    }
}

/// Seeded random event sequences through the reconnect decision, its invariants checked after
/// every step; a failing sequence shrinks to the few events that break the rule.
@Suite("The reconnect decision under any order of events")
struct ReconnectDecisionModelTests {
    typealias Decision = ReconnectDecision<ErasedClock>

    /// What the link tells the policy; an attempt's failure, a refused pairing and a retry due
    /// reach it only through the decision (`attemptEnded`, `retryDue`).
    static let policyEvents: [ReconnectPolicy<ErasedClock>.Event] = [
        .connected, .linkLost(.timeout), .linkLost(.unspecified), .linkLost(.remote), .linkLost(.local),
        .unreachableAtBoot, .deviceSeen, .userDisconnected, .userAskedToConnect, .targetCleared,
        .preparingForSleep, .resumedFromSleep, .requestWaiting, .requestEnded,
    ]
    static let results: [Decision.AttemptResult] = [.connected, .failed(reason: "Page Timeout"), .pairingRefused(reason: "refused")]

    struct Model {
        var decision = Decision(policy: ReconnectPolicy(random: SplitMix64(seed: 11)))
        var now = ErasedClock.Instant(offset: .zero)
        var armed: ErasedClock.Instant?
        var lastArmed: ErasedClock.Instant?
        /// Attempts started and not ended, with their callers.
        var running: [Decision.Attempt: Decision.Reply?] = [:]
        var started: Set<Decision.Attempt> = []
        var asked: Set<Decision.Reply> = []
        var answered: Set<Decision.Reply> = []
        var lastReply: UInt64 = 0
        /// The user disconnected and has not asked (nor did the link come back by itself).
        var held = false
        var stopped = false

        mutating func event(_ code: Int) -> Decision.Event? {
            switch code % 8 {
            case 0, 1: return .policy(Self.pick(ReconnectDecisionModelTests.policyEvents, code / 8))
            case 2:
                lastReply += 1
                return .connectNow(.init(lastReply))
            case 3: return .callerLeft(.init(UInt64(code / 8 % (Int(lastReply) + 1))))
            case 4:
                let attempt = running.keys.sorted().first ?? .init(number: UInt64(code / 8 % 4))
                return .attemptEnded(attempt, Self.pick(ReconnectDecisionModelTests.results, code / 32))
            case 5:
                // The timer fires at its deadline; now and then a stale one fires.
                guard let deadline = code / 8 % 4 == 0 ? lastArmed?.advanced(by: .milliseconds(-1)) : armed else { return nil }
                now = max(now, deadline)
                return .retryDue(deadline: deadline)
            case 6: return code / 8 % 6 == 0 ? .stop : nil
            default: return nil
            }
        }

        static func pick<T>(_ values: [T], _ index: Int) -> T { values[index % values.count] }

        mutating func apply(_ code: Int) {
            guard let event = event(code) else {
                now = now.advanced(by: .milliseconds(code % 20_000))
                return
            }
            let effects = decision.step(event, now: now)
            switch event {
            case .connectNow(let reply):
                asked.insert(reply)
                held = false
            case .policy(.userDisconnected), .policy(.linkLost(.local)): held = held || !stopped
            case .policy(.userAskedToConnect), .policy(.targetCleared), .policy(.connected): held = false
            case .attemptEnded(let attempt, _): running[attempt] = nil
            case .stop: stopped = true
            default: break
            }
            for effect in effects {
                switch effect {
                case .start(let attempt):
                    #expect(!started.contains(attempt), "attempt \(attempt) started twice")
                    #expect(!held, "a retry undid the user's disconnect, after \(event)")
                    started.insert(attempt)
                    if case .connectNow(let reply) = event { running[attempt] = reply } else { running[attempt] = .some(nil) }
                case .cancel(let attempt):
                    #expect(running[attempt] != nil, "cancelled an attempt not under way")
                case .arm(let deadline):
                    #expect(deadline > now, "armed for the past")
                    armed = deadline
                    lastArmed = deadline
                case .cancelTimer:
                    #expect(armed != nil, "cancelled a timer not armed")
                    armed = nil
                case .answer(let reply, _):
                    #expect(asked.contains(reply), "answered a call nobody made")
                    #expect(!answered.contains(reply), "answered \(reply) twice")
                    answered.insert(reply)
                case .tell, .endChanges:
                    break
                }
                if stopped, event != .stop {
                    if case .answer = effect {} else { Issue.record("\(effect) after the stop") }
                }
            }
            if case .retryDue(let deadline) = event, deadline == armed { armed = nil }
            if case .stop = event { running = [:] }
            #expect(decision.armed == armed, "the decision and its effects disagree on the timer")
            #expect(Set(decision.underWay.keys) == Set(running.keys), "the decision and its effects disagree on the attempts")
            if held { #expect(decision.isHeldByUser || decision.isStopped, "held by the user, but the policy is \(decision.policy.state)") }
            // Every call is answered by its attempt's end or by the stop, never left waiting.
            let waiting = asked.subtracting(answered)
            #expect(waiting.allSatisfy { reply in running.values.contains(reply) }, "a call left with no attempt to answer it")
        }
    }

    @Test("any sequence: an attempt started once, none after the user's disconnect until they ask, every call answered exactly once, a timer armed only ahead and nothing after the stop",
          .shrinking(true))
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...40_000).array(of: 1...80)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var model = Model()
            for code in codes { model.apply(code) }
        }
    }
}
