import Synchronization

/// Fans one stream of events out to any number of `AsyncStream` subscribers: the one fan-out
/// type of speakerd (BlueZ's events, the readiness gate's changes, the operation queue's and the
/// start-up sequencer's events, playback's changes all go through it).
///
/// Events are yielded under the lock that registers subscribers, so every subscriber sees them in
/// publication order and never misses one published after `subscribe()` returned. Owners that
/// publish while holding their own lock (the readiness gate) get a total order between their
/// state changes and the events. A subscriber that stops iterating is forgotten through
/// `onTermination`, so an abandoned stream holds nothing.
public final class Broadcaster<Event: Sendable>: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())
    private let limit: Int?

    /// Every subscriber keeps every event until it reads it.
    public init() { limit = nil }

    /// Every subscriber keeps at most the newest `limit` unread events: for sources that can
    /// burst (a BlueZ discovery floods property changes) and subscribers that only need to catch up.
    public init(bufferingNewest limit: Int) { self.limit = limit }

    /// A new stream; `initial` (if any) is its first element, delivered before any later event.
    public func subscribe(startingWith initial: Event? = nil) -> AsyncStream<Event> {
        let policy: AsyncStream<Event>.Continuation.BufferingPolicy = limit.map { .bufferingNewest($0) } ?? .unbounded
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: policy)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        let registered = state.withLock { state in
            if let initial { continuation.yield(initial) }
            guard !state.finished else { return false }
            state.subscribers[id] = continuation
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    /// Sends `event` to every current subscriber.
    public func publish(_ event: Event) {
        state.withLock { state in
            for continuation in state.subscribers.values { continuation.yield(event) }
        }
    }

    /// Ends every stream; later subscribers get an already finished stream.
    public func finish() {
        let subscribers = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }

    /// How many streams are live; lets tests check that abandoned streams are released.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}
