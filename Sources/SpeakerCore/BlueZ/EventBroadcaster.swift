import Synchronization

/// Fans one stream of events out to any number of subscribers, each with its own `AsyncStream`.
///
/// Why: the daemon's reconnect policy, the scan-and-pick UI and the status API all watch BlueZ at
/// once; each must see every event in order, and a subscriber that goes away must be dropped at once.
final class EventBroadcaster<Element: Sendable>: Sendable {
    private struct State {
        var nextID = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    /// A new subscription; it sees events yielded after this call.
    func subscribe(bufferingNewest limit: Int = 1024) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(limit))
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ element: Element) {
        let targets = state.withLock { Array($0.continuations.values) }
        for continuation in targets { continuation.yield(element) }
    }

    /// Ends every subscription; later subscriptions end at once.
    func finish() {
        let targets = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in targets { continuation.finish() }
    }

    var subscriberCount: Int { state.withLock { $0.continuations.count } }
}
