import Logind
@testable import Readiness
import TestSupport
import Testing

@Suite("sleep inhibitor")
struct SleepInhibitorTests {
    private static let why = "finishing speaker operations"
    private static let delayLock = ["sleep", "speakerd", why, "delay"]

    @Test("the inhibitor takes a delay lock when the queue goes busy and releases it when it drains")
    func followsTheOperationQueue() async throws {
        let logind = try await FakeLogind.start()
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await logind.world.connect()), why: Self.why)
        var states = await inhibitor.states().makeAsyncIterator()
        #expect(await states.next() == .idle)

        let queue = AsyncOperationQueue(defaultTimeout: nil)
        let events = queue.events()
        let follower = Task { await inhibitor.follow(events) }
        defer { follower.cancel() }
        let (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        let ticket = await queue.add("connect speaker") { _ in
            for await _ in gate { break }
        }

        #expect(await states.next() == .acquiring)
        #expect(await states.next() == .held)
        #expect(try await logind.inhibitors() == [Self.delayLock])

        openGate.yield(())
        #expect(try await ticket.outcome() == .ok)
        #expect(await states.next() == .idle)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }

    @Test("work queued before the inhibitor starts following the queue is covered too")
    func alreadyBusyQueueIsCovered() async throws {
        let logind = try await FakeLogind.start()
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await logind.world.connect()), why: Self.why)
        var states = await inhibitor.states().makeAsyncIterator()
        #expect(await states.next() == .idle)

        let queue = AsyncOperationQueue(defaultTimeout: nil)
        let (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        let ticket = await queue.add("load state") { _ in
            for await _ in gate { break }
        }
        let follower = Task { await inhibitor.follow(queue: queue) }
        defer { follower.cancel() }

        #expect(await states.next() == .acquiring)
        #expect(await states.next() == .held)
        #expect(try await logind.inhibitors() == [Self.delayLock])

        openGate.yield(())
        #expect(try await ticket.outcome() == .ok)
        #expect(await states.next() == .idle)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }

    @Test("preparing for sleep releases the lock and resume takes it again while the queue is still busy")
    func sleepReleasesAndResumeRetakes() async throws {
        let logind = try await FakeLogind.start()
        let client = LogindClient(connection: try await logind.world.connect())
        let inhibitor = SleepInhibitor(provider: client, why: Self.why)
        var states = await inhibitor.states().makeAsyncIterator()
        #expect(await states.next() == .idle)
        let sleepEvents = try await client.sleepEvents()
        let follower = Task { await inhibitor.follow(sleepEvents: sleepEvents) }
        defer { follower.cancel() }

        await inhibitor.handle(QueueEvent.busy)
        #expect(await states.next() == .acquiring)
        #expect(await states.next() == .held)

        try await logind.emitPrepareForSleep(true)
        #expect(await states.next() == .idle)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)

        try await logind.emitPrepareForSleep(false)
        #expect(await states.next() == .acquiring)
        #expect(await states.next() == .held)
        #expect(try await logind.inhibitors() == [Self.delayLock])

        await inhibitor.handle(QueueEvent.drained)
        #expect(await states.next() == .idle)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }

    @Test("sleep and resume while the queue is idle take no lock")
    func idleQueueNeverInhibits() async throws {
        let logind = try await FakeLogind.start()
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await logind.world.connect()), why: Self.why)

        await inhibitor.handle(SleepEvent.preparingForSleep)
        await inhibitor.handle(SleepEvent.resumed)
        await inhibitor.handle(QueueEvent.drained)

        #expect(await inhibitor.state == .idle)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }

    @Test("with no logind on the bus the inhibitor becomes unavailable and nothing fails")
    func noLogindMeansUnavailable() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await world.connect()), why: Self.why)

        await inhibitor.handle(QueueEvent.busy)
        #expect(await inhibitor.state == .unavailable(LogindError.notRunning.description))

        await inhibitor.handle(SleepEvent.preparingForSleep)
        await inhibitor.handle(SleepEvent.resumed)
        await inhibitor.handle(QueueEvent.drained)
        #expect(await inhibitor.state == .unavailable(LogindError.notRunning.description))

        // The next busy period tries again, and finds logind still missing.
        await inhibitor.handle(QueueEvent.busy)
        #expect(await inhibitor.state == .unavailable(LogindError.notRunning.description))
        await inhibitor.shutdown()
        #expect(await inhibitor.state == .idle)
    }

    @Test("logind starting after speakerd is found at the next busy period")
    func logindAppearingLaterIsUsed() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let inhibitor = SleepInhibitor(provider: LogindClient(connection: try await world.connect()), why: Self.why)
        await inhibitor.handle(QueueEvent.busy)
        await inhibitor.handle(QueueEvent.drained)
        #expect(await inhibitor.state == .unavailable(LogindError.notRunning.description))

        let logind = try await FakeLogind.start(on: world)
        await inhibitor.handle(QueueEvent.busy)
        #expect(await inhibitor.state == .held)
        #expect(try await logind.inhibitors() == [Self.delayLock])
        await inhibitor.handle(QueueEvent.drained)
        #expect(try await logind.inhibitors(settlingAt: 0).isEmpty)
    }
}
