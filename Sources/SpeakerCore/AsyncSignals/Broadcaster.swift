import Synchronization

/// Fans one stream of events out to any number of `AsyncStream` subscribers: the one fan-out
/// type of speakerd (BlueZ's events, the readiness gate's changes, the operation queue's and the
/// start-up sequencer's events, playback's changes all go through it).
///
/// Publishers take turns (`publishing`), so every subscriber sees the events in one publication
/// order, and never misses one published after `subscribe()` returned. Owners that publish while
/// holding their own lock (the readiness gate) get a total order between their state changes and
/// the events. A subscriber that stops iterating is forgotten through `onTermination`, so an
/// abandoned stream holds nothing.
///
/// Two locks, never one: yielding to a waiting subscriber resumes its task, which takes that
/// task's status lock, while cancelling a subscriber's task runs its `onTermination` (which
/// forgets the subscriber) under that same status lock. So the registry's lock is never held
/// while yielding: one lock for both deadlocked speakerd at start-up, a BlueZ event published
/// while a BlueZ call's task group cancelled its watcher (found under load in CI).
public final class Broadcaster<Event: Sendable>: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
        var finished = false
    }

    /// The subscribers: taken only for bookkeeping, never while yielding or finishing a stream.
    private let state = Mutex(State())
    /// Serialises `publish` and `finish`, which yield and finish streams outside `state`.
    private let publishing = Mutex(())
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
        publishing.withLock { _ in
            for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(event) }
        }
    }

    /// Ends every stream; later subscribers get an already finished stream.
    public func finish() {
        publishing.withLock { _ in
            let subscribers = state.withLock { state in
                state.finished = true
                defer { state.subscribers.removeAll() }
                return Array(state.subscribers.values)
            }
            for continuation in subscribers { continuation.finish() }
        }
    }

    /// How many streams are live; lets tests check that abandoned streams are released.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}
