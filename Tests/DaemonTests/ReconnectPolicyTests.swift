import AsyncSignals
import Clocks
import Testing
import TestSupport
@testable import Daemon

@Suite("Reconnect policy scenarios")
struct ReconnectPolicyTests {
    typealias Policy = ReconnectPolicy<TestClock<Duration>>
    let clock = TestClock()

    func makePolicy(seed: UInt64 = 1) -> Policy { Policy(random: SplitMix64(seed: seed)) }

    /// Drives failed attempts and collects the delays the policy asked for.
    func failedAttemptDelays(_ policy: inout Policy, count: Int) async -> [Duration] {
        var delays: [Duration] = []
        for _ in 0..<count {
            guard case .retry(let delay) = policy.handle(.connectFailed, now: clock.now) else { break }
            delays.append(delay)
            await clock.advance(by: delay)
            #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        }
        return delays
    }

    @Test("a timed-out link is retried after about a second, doubling with jitter up to the 60 s cap")
    func timeoutBacksOffToCap() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        guard case .retry(let first) = policy.handle(.linkLost(.timeout), now: clock.now) else {
            Issue.record("expected a retry"); return
        }
        #expect(first >= .milliseconds(800) && first <= .milliseconds(1200))
        await clock.advance(by: first)
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        let delays = await failedAttemptDelays(&policy, count: 9)
        #expect(delays.count == 9)
        for (index, delay) in delays.enumerated() {
            let nominal = min(Double(1 << (index + 1)), 60)
            #expect(secondsOf(delay) >= nominal * 0.8 - 0.001, "attempt \(index + 1): \(delay)")
            #expect(secondsOf(delay) <= min(nominal * 1.2, 60) + 0.001, "attempt \(index + 1): \(delay)")
        }
        #expect(delays.last! <= .seconds(60))
        #expect(delays.suffix(3).allSatisfy { $0 >= .seconds(48) })
    }

    @Test("jitter differs between two boxes that lost their speaker together")
    func jitterSpreadsBoxes() {
        var one = makePolicy(seed: 1), two = makePolicy(seed: 99)
        _ = one.handle(.connected, now: clock.now); _ = two.handle(.connected, now: clock.now)
        #expect(one.handle(.linkLost(.unspecified), now: clock.now) != two.handle(.linkLost(.unspecified), now: clock.now))
    }

    @Test("Connected going false with no reason is treated like a timeout")
    func noReasonIsEager() {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.linkLost(.unspecified), now: clock.now)
        guard case .waiting(.eager, attempt: 0, _) = policy.state else {
            Issue.record("expected eager waiting, got \(policy.state)"); return
        }
    }

    @Test("a speaker that reappears is retried at once instead of waiting out the backoff")
    func reappearanceRetriesAtOnce() async {
        var policy = makePolicy()
        _ = policy.handle(.unreachableAtBoot, now: clock.now)
        await clock.advance(by: .seconds(2))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        _ = await failedAttemptDelays(&policy, count: 3)
        guard case .retry(let long) = policy.handle(.connectFailed, now: clock.now) else { Issue.record("no retry"); return }
        #expect(long > .seconds(10))
        await clock.advance(by: .seconds(3))
        #expect(policy.handle(.deviceSeen, now: clock.now) == .connectNow)
        // A burst of RSSI updates while that attempt runs does not start more attempts.
        #expect(policy.handle(.deviceSeen, now: clock.now) == .none)
        #expect(policy.handle(.connected, now: clock.now) == .cancelRetry)
        #expect(policy.state == .connected)
    }

    @Test("a play waiting for a speaker out of reach tries it at once, then every 3 s while it waits, not after a long backoff")
    func waitingRequestTriesAtOnce() async {
        var policy = makePolicy()
        _ = policy.handle(.unreachableAtBoot, now: clock.now)
        await clock.advance(by: .seconds(2))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        _ = await failedAttemptDelays(&policy, count: 4)
        guard case .retry(let long) = policy.handle(.connectFailed, now: clock.now) else { Issue.record("no retry"); return }
        #expect(long > .seconds(20), "the backoff is long by now: \(long)")
        // The speaker is switched on 2 s later and a person asks to play: tried at once.
        await clock.advance(by: .seconds(2))
        #expect(policy.handle(.requestWaiting, now: clock.now) == .connectNow)
        // Still out of reach: while the request waits, the next try is 3 s after the last.
        #expect(policy.handle(.connectFailed, now: clock.now) == .retry(after: .seconds(3)))
        await clock.advance(by: .seconds(3))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        #expect(policy.handle(.connectFailed, now: clock.now) == .retry(after: .seconds(3)))
        // A second request half a second later does not page it again at once: a second after
        // the last attempt at the soonest.
        await clock.advance(by: .milliseconds(500))
        #expect(policy.handle(.requestWaiting, now: clock.now) == .retry(after: .milliseconds(500)))
        // Both requests give up: the backoff is long again.
        _ = policy.handle(.requestEnded, now: clock.now)
        _ = policy.handle(.requestEnded, now: clock.now)
        await clock.advance(by: .milliseconds(500))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        guard case .retry(let after) = policy.handle(.connectFailed, now: clock.now) else { Issue.record("no retry"); return }
        #expect(after > .seconds(20), "back to the backoff once nobody waits: \(after)")
    }

    @Test("a waiting request never overrules the user's disconnect")
    func waitingRequestRespectsHold() {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.userDisconnected, now: clock.now)
        #expect(policy.handle(.requestWaiting, now: clock.now) == .none)
        #expect(policy.state == .heldByUser)
    }

    @Test("a speaker that is unreachable at boot is retried on the eager schedule")
    func unreachableAtBoot() {
        var policy = makePolicy()
        guard case .retry(let delay) = policy.handle(.unreachableAtBoot, now: clock.now) else { Issue.record("no retry"); return }
        #expect(delay <= .milliseconds(1200))
    }

    @Test("when the speaker ends the link it is retried gently and never stolen back in a tight loop")
    func remoteEndIsGentle() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        guard case .retry(let first) = policy.handle(.linkLost(.remote), now: clock.now) else { Issue.record("no retry"); return }
        #expect(first >= .seconds(4))
        await clock.advance(by: first)
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        // The phone that took it still holds it: the attempt fails and the speaker keeps advertising.
        guard case .retry = policy.handle(.connectFailed, now: clock.now) else { Issue.record("no retry"); return }
        var attemptsInAMinute = 1
        for _ in 0..<60 {
            await clock.advance(by: .seconds(1))
            switch policy.handle(.deviceSeen, now: clock.now) {
            case .connectNow:
                attemptsInAMinute += 1
                _ = policy.handle(.connectFailed, now: clock.now)
            case .retry(let delay):
                #expect(delay <= .seconds(15))
            case .none, .cancelRetry:
                break
            }
            if policy.handle(.retryDue, now: clock.now) == .connectNow {
                attemptsInAMinute += 1
                _ = policy.handle(.connectFailed, now: clock.now)
            }
        }
        #expect(attemptsInAMinute >= 2, "it must keep trying")
        #expect(attemptsInAMinute <= 5, "at most one attempt per 15 s, got \(attemptsInAMinute)")
    }

    @Test("after the speaker ended the link, its reappearance re-arms an attempt once the spacing allows")
    func remoteReappearanceRearms() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.linkLost(.remote), now: clock.now)
        await clock.advance(by: .seconds(7))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
        guard case .retry(let next) = policy.handle(.connectFailed, now: clock.now) else { Issue.record("no retry"); return }
        #expect(next > .seconds(5))
        await clock.advance(by: .seconds(2))
        // Seen 2 s after the last attempt: not yet, but sooner than the schedule if that is later.
        let early = policy.handle(.deviceSeen, now: clock.now)
        if next > .seconds(15) { #expect(early == .retry(after: .seconds(13))) } else { #expect(early == .none) }
        await clock.advance(by: .seconds(13))
        #expect(policy.handle(.deviceSeen, now: clock.now) == .connectNow)
    }

    @Test("after the user disconnects nothing reconnects until they ask")
    func userDisconnectIsRespected() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        #expect(policy.handle(.userDisconnected, now: clock.now) == .cancelRetry)
        #expect(policy.handle(.linkLost(.unspecified), now: clock.now) == .none)
        #expect(policy.handle(.deviceSeen, now: clock.now) == .none)
        await clock.advance(by: .seconds(600))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
        #expect(policy.state == .heldByUser)
        #expect(policy.handle(.userAskedToConnect, now: clock.now) == .connectNow)
    }

    @Test("""
        a speaker that would not pair is not paged again: no retry, not when it shows up, not for a waiting play, \
        not after a suspend or its pairing link dropping, until the user asks
        """)
    func refusedPairingWaitsForTheUser() async {
        var policy = makePolicy()
        #expect(policy.handle(.userAskedToConnect, now: clock.now) == .connectNow)
        // The pairing's link drops before BlueZ answers Pair: a retry is armed, then withdrawn.
        guard case .retry = policy.handle(.linkLost(.remote), now: clock.now) else { Issue.record("expected a retry"); return }
        #expect(policy.handle(.pairingRefused, now: clock.now) == .cancelRetry)
        #expect(policy.state == .needsPairing)
        #expect(policy.handle(.deviceSeen, now: clock.now) == .none)
        #expect(policy.handle(.requestWaiting, now: clock.now) == .none)
        #expect(policy.handle(.linkLost(.remote), now: clock.now) == .none)
        await clock.advance(by: .seconds(600))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
        _ = policy.handle(.preparingForSleep, now: clock.now)
        #expect(policy.handle(.linkLost(.timeout), now: clock.now) == .none)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .none)
        #expect(policy.state == .needsPairing)
        #expect(policy.handle(.userAskedToConnect, now: clock.now) == .connectNow, "the user's connect tries it again")
        #expect(policy.handle(.connected, now: clock.now) == .cancelRetry)
        #expect(policy.state == .connected)
    }

    @Test("a local disconnect (bluetoothctl on this machine) counts as the user's")
    func localDisconnectIsRespected() {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        #expect(policy.handle(.linkLost(.local), now: clock.now) == .cancelRetry)
        #expect(policy.handle(.deviceSeen, now: clock.now) == .none)
        #expect(policy.state == .heldByUser)
    }

    @Test("on resume from suspend the speaker is reconnected after a short delay")
    func resumeFromSuspend() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        #expect(policy.handle(.preparingForSleep, now: clock.now) == .cancelRetry)
        #expect(policy.handle(.linkLost(.timeout), now: clock.now) == .none)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .retry(after: .seconds(2)))
        await clock.advance(by: .seconds(1))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
        await clock.advance(by: .seconds(1))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
    }

    @Test("a second resume during the delay restarts it, and the restarted delay still ends in one attempt")
    func secondResumeRestartsTheDelay() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.preparingForSleep, now: clock.now)
        _ = policy.handle(.linkLost(.timeout), now: clock.now)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .retry(after: .seconds(2)))
        await clock.advance(by: .seconds(1))
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .retry(after: .seconds(2)))
        // 2.5 s after the first resume, 1.5 s after the second: not yet.
        await clock.advance(by: .milliseconds(1_500))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
        await clock.advance(by: .milliseconds(500))
        #expect(policy.handle(.retryDue, now: clock.now) == .connectNow)
    }

    @Test("going back to sleep before the resume delay is over cancels the reconnect")
    func sleepCancelsPendingReconnect() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.preparingForSleep, now: clock.now)
        _ = policy.handle(.linkLost(.timeout), now: clock.now)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .retry(after: .seconds(2)))
        await clock.advance(by: .seconds(1))
        #expect(policy.handle(.preparingForSleep, now: clock.now) == .cancelRetry)
        await clock.advance(by: .seconds(5))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
        // Awake again: the reconnect is asked for anew, after the delay.
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .retry(after: .seconds(2)))
    }

    @Test("a user's disconnect survives a suspend")
    func heldSurvivesSuspend() {
        var policy = makePolicy()
        _ = policy.handle(.userDisconnected, now: clock.now)
        _ = policy.handle(.preparingForSleep, now: clock.now)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .none)
        #expect(policy.state == .heldByUser)
    }

    @Test("a user's disconnect survives a suspend in which the link timed out, and a refused pairing survives one too")
    func holdsSurviveALinkLostAsleep() {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.preparingForSleep, now: clock.now)
        _ = policy.handle(.userDisconnected, now: clock.now)
        _ = policy.handle(.linkLost(.timeout), now: clock.now)
        #expect(policy.handle(.resumedFromSleep, now: clock.now) == .none, "the speaker the user disconnected was reconnected on resume")
        #expect(policy.state == .heldByUser)

        var refused = makePolicy()
        _ = refused.handle(.pairingRefused, now: clock.now)
        _ = refused.handle(.preparingForSleep, now: clock.now)
        _ = refused.handle(.linkLost(.unspecified), now: clock.now)
        #expect(refused.handle(.resumedFromSleep, now: clock.now) == .none)
        #expect(refused.state == .needsPairing)
    }

    @Test("a stale timer from an earlier schedule does not start an attempt early")
    func staleTimerIgnored() async {
        var policy = makePolicy()
        _ = policy.handle(.connected, now: clock.now)
        _ = policy.handle(.linkLost(.remote), now: clock.now)
        await clock.advance(by: .seconds(1))
        #expect(policy.handle(.retryDue, now: clock.now) == .none)
    }

    @Test("forgetting the speaker stops all attempts")
    func forgetStops() {
        var policy = makePolicy()
        _ = policy.handle(.unreachableAtBoot, now: clock.now)
        #expect(policy.handle(.targetCleared, now: clock.now) == .cancelRetry)
        #expect(policy.handle(.deviceSeen, now: clock.now) == .none)
        #expect(policy.state == .idle)
    }
}
