import AsyncSignals
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
}
