import Logind
import TestSupport
import Testing

@Suite("logind client")
struct LogindClientTests {
    @Test("PrepareForSleep true then false arrive as preparing-for-sleep and resumed")
    func sleepSignalsBecomeEvents() async throws {
        let logind = try await FakeLogind.start()
        let client = LogindClient(connection: try await logind.world.connect())
        let events = try await client.sleepEvents()

        try await logind.emitPrepareForSleep(true)
        try await logind.emitPrepareForSleep(false)

        var received: [SleepEvent] = []
        for await event in events {
            received.append(event)
            if received.count == 2 { break }
        }
        #expect(received == [.preparingForSleep, .resumed])
    }

    @Test("a delay lock shows up in logind's inhibitor list until it is released")
    func delayLockLivesUntilReleased() async throws {
        let logind = try await FakeLogind.start()
        let client = LogindClient(connection: try await logind.world.connect())

        let lock = try await client.inhibitDelay(why: "connecting the speaker")
        #expect(lock.isHeld)
        #expect(try await logind.inhibitors() == [["sleep", "speakerd", "connecting the speaker", "delay"]])

        lock.release()
        #expect(!lock.isHeld)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
        lock.release()  // a second release is harmless
    }

    @Test("dropping the last reference to a lock ends the inhibitor")
    func droppedLockEndsInhibitor() async throws {
        let logind = try await FakeLogind.start()
        let client = LogindClient(connection: try await logind.world.connect())

        var lock: SleepInhibitorLock? = try await client.inhibitDelay(why: "writing state")
        #expect(try await logind.inhibitors().count == 1)
        #expect(lock?.isHeld == true)
        lock = nil
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }

    @Test("without logind on the bus, Inhibit reports logind as not running")
    func noLogindIsATypedResult() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let client = LogindClient(connection: try await world.connect())

        #expect(await client.isRunning() == false)
        await #expect(throws: LogindError.notRunning) {
            _ = try await client.inhibitDelay(why: "connecting the speaker")
        }
        // Subscribing still works: logind may start later.
        let events = try await client.sleepEvents()
        events.cancel()
        #expect(LogindError.notRunning.description.contains("logind is not running"))
    }
}
