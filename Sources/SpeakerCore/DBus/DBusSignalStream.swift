import Synchronization

/// The signals matching one rule, as an `AsyncSequence`.
///
/// The bus-side match rule lives exactly as long as this stream: it was added before the
/// stream was handed out, and it is removed (RemoveMatch) when the consumer's task is
/// cancelled, when `cancel()` is called, when the connection closes, or when the stream and
/// all its iterators are released.
public struct DBusSignalStream: AsyncSequence, Sendable {
    public typealias Element = DBusSignal

    let base: AsyncStream<DBusSignal>
    let subscription: DBusSubscription

    /// Ends the subscription now; iteration finishes after already-delivered signals.
    public func cancel() { subscription.cancel() }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), subscription: subscription)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<DBusSignal>.Iterator
        /// Keeps the subscription alive while someone iterates.
        let subscription: DBusSubscription

        public mutating func next() async -> DBusSignal? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> DBusSignal? {
            await base.next(isolation: actor)
        }
    }
}

/// The owner of one subscription's match rule: cancelling (or releasing) it removes the
/// local route and sends RemoveMatch to the bus, exactly once.
final class DBusSubscription: Sendable {
    private let cancelled = Atomic<Bool>(false)
    private let cleanup: @Sendable () -> Void

    init(cleanup: @escaping @Sendable () -> Void) { self.cleanup = cleanup }

    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cleanup()
    }

    deinit { cancel() }
}

/// The owner of a bus name over time: the current owner first, then each change.
/// nil means nobody owns the name.
public struct DBusNameOwnerStream: AsyncSequence, Sendable {
    public typealias Element = String?

    let initialOwner: String?
    let signals: DBusSignalStream

    public func cancel() { signals.cancel() }

    public func makeAsyncIterator() -> Iterator {
        Iterator(pendingInitial: true, last: nil, initialOwner: initialOwner, signals: signals.makeAsyncIterator())
    }

    public struct Iterator: AsyncIteratorProtocol {
        var pendingInitial: Bool
        var last: String??
        let initialOwner: String?
        var signals: DBusSignalStream.Iterator

        public mutating func next() async -> String?? {
            if pendingInitial {
                pendingInitial = false
                last = .some(initialOwner)
                return .some(initialOwner)
            }
            while let signal = await signals.next() {
                guard signal.arguments.count == 3, case .string(let newOwner) = signal.arguments[2] else { continue }
                let owner: String? = newOwner.isEmpty ? nil : newOwner
                if let last, last == owner { continue }
                last = .some(owner)
                return .some(owner)
            }
            return nil
        }
    }
}
