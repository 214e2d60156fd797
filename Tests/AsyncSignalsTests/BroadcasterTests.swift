@testable import AsyncSignals
import Synchronization
import Testing

/// The one fan-out type every broadcast in speakerd goes through (BlueZ's events, the gate's
/// changes, the queue's and sequencer's events, a song's playback events).
@Suite("Broadcaster")
struct BroadcasterTests {
    @Test("a subscriber that goes away is dropped, and shut-down ends every stream")
    func subscriptions() async throws {
        let broadcaster = Broadcaster<Int>()
        do {
            let stream = broadcaster.subscribe()
            _ = stream
        }
        #expect(broadcaster.subscriberCount == 0)
        let kept = broadcaster.subscribe()
        broadcaster.publish(1)
        broadcaster.finish()
        var seen: [Int] = []
        for await value in kept { seen.append(value) }
        #expect(seen == [1])
        var late = broadcaster.subscribe().makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test("every subscriber sees every event in publication order, the initial one first")
    func order() async throws {
        let broadcaster = Broadcaster<Int>()
        let first = broadcaster.subscribe(startingWith: 0)
        let second = broadcaster.subscribe()
        for value in 1...100 { broadcaster.publish(value) }
        broadcaster.finish()
        var seenFirst: [Int] = [], seenSecond: [Int] = []
        for await value in first { seenFirst.append(value) }
        for await value in second { seenSecond.append(value) }
        #expect(seenFirst == Array(0...100))
        #expect(seenSecond == Array(1...100))
    }

    @Test("a bounded broadcaster keeps only the newest unread events of a slow subscriber")
    func boundedBuffer() async throws {
        let broadcaster = Broadcaster<Int>(bufferingNewest: 3)
        let slow = broadcaster.subscribe()
        for value in 1...10 { broadcaster.publish(value) }
        broadcaster.finish()
        var seen: [Int] = []
        for await value in slow { seen.append(value) }
        #expect(seen == [8, 9, 10])
    }

    @Test("publishing while subscribers' tasks are being cancelled never deadlocks (yielding resumes a task under its status lock, cancelling it runs onTermination under that lock)")
    func publishWhileSubscribersAreCancelled() async throws {
        let broadcaster = Broadcaster<Int>()
        let deadline = ContinuousClock.now + .seconds(30)
        for round in 0..<150 {
            let consumers = (0..<8).map { _ in
                let stream = broadcaster.subscribe()
                return Task { for await _ in stream {} }
            }
            // The publisher and the canceller are plain threads, so a deadlock between them
            // leaves this test's own task free to notice it and fail.
            let finished = Mutex(0)
            DetachedThread.start(name: "publisher") {
                for event in 0..<200 { broadcaster.publish(event) }
                finished.withLock { $0 += 1 }
            }
            DetachedThread.start(name: "canceller") {
                for consumer in consumers { consumer.cancel() }
                finished.withLock { $0 += 1 }
            }
            while finished.withLock({ $0 }) < 2 {
                guard ContinuousClock.now < deadline else {
                    Issue.record("publish and cancel deadlocked in round \(round)")
                    return
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            for consumer in consumers { await consumer.value }
        }
        #expect(broadcaster.subscriberCount == 0, "cancelled subscribers are forgotten")
    }
}
