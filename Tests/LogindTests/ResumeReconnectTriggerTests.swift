import AsyncSignals
import Clocks
import Logind
import Testing

@Suite("resume reconnect trigger")
struct ResumeReconnectTriggerTests {
    @Test("resume asks for a reconnect once the delay has passed")
    func resumeRequestsReconnectAfterDelay() async {
        let clock = TestClock()
        let trigger = ResumeReconnectTrigger(delay: .seconds(2), clock: clock)
        var requests = trigger.requests.makeAsyncIterator()

        await trigger.handle(.resumed)
        await clock.advance(by: .seconds(2))

        let request: Void? = await requests.next()
        #expect(request != nil)
    }

    @Test("no reconnect is asked for before the delay is over")
    func nothingBeforeTheDelay() async {
        let clock = TestClock()
        let trigger = ResumeReconnectTrigger(delay: .seconds(2), clock: clock)

        await trigger.handle(.resumed)
        await clock.advance(by: .milliseconds(1_900))
        await trigger.finish()

        var received = 0
        for await _ in trigger.requests { received += 1 }
        #expect(received == 0)
    }

    @Test("a second resume during the delay restarts it")
    func secondResumeRestartsTheDelay() async {
        let clock = TestClock()
        let trigger = ResumeReconnectTrigger(delay: .seconds(2), clock: clock)

        await trigger.handle(.resumed)
        await clock.advance(by: .seconds(1))
        await trigger.handle(.resumed)
        // 2.5 s after the first resume, 1.5 s after the second: not yet.
        await clock.advance(by: .milliseconds(1_500))
        await trigger.finish()

        var received = 0
        for await _ in trigger.requests { received += 1 }
        #expect(received == 0)
    }

    @Test("the restarted delay still ends in one reconnect")
    func restartedDelayEndsInOneReconnect() async {
        let clock = TestClock()
        let trigger = ResumeReconnectTrigger(delay: .seconds(2), clock: clock)
        var requests = trigger.requests.makeAsyncIterator()

        await trigger.handle(.resumed)
        await clock.advance(by: .seconds(1))
        await trigger.handle(.resumed)
        await clock.advance(by: .seconds(2))

        let request: Void? = await requests.next()
        #expect(request != nil)
        await trigger.finish()
        let after: Void? = await requests.next()
        #expect(after == nil)
    }

    @Test("going back to sleep before the delay is over cancels the reconnect")
    func sleepCancelsPendingReconnect() async {
        let clock = TestClock()
        let trigger = ResumeReconnectTrigger(delay: .seconds(2), clock: clock)

        await trigger.handle(.resumed)
        await clock.advance(by: .seconds(1))
        await trigger.handle(.preparingForSleep)
        await clock.advance(by: .seconds(5))
        await trigger.finish()

        var received = 0
        for await _ in trigger.requests { received += 1 }
        #expect(received == 0)
    }
}
