import Configuration
import MIDI
import Synchronization

/// The bytes held by requests whose songs are still being read from clients, bounded in all and
/// per client.
///
/// The request limits bound how many `Play` calls wait, not what each holds: 128 pipes filled to
/// just under the 16 MiB song limit and never closed held 2.28 GB until their read timeout. Every
/// byte a read keeps (its buffer's capacity, not only what arrived) is reserved here first; a read
/// that would pass either cap is refused at once with `busy`, and its bytes are given back as soon
/// as the song is parsed or the read fails. Shared by every request of one player; reads reserve
/// from Dispatch's queue while the player's actor is busy elsewhere, hence the lock and not the actor.
public final class SongReadBudget: Sendable {
    /// Why a reservation was refused: which cap, and how much was held under it.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case total(held: Int, asked: Int, limit: Int)
        case perClient(held: Int, asked: Int, limit: Int)

        public var description: String {
            switch self {
            case let .total(held, _, limit):
                "speakerd is already reading \(Mebibytes.amount(held)) of songs from clients and this one would pass "
                    + "the \(Mebibytes.limit(limit)) limit for songs being read (read_budget_mib); try again shortly"
            case let .perClient(held, _, limit):
                "this client is already sending \(Mebibytes.amount(held)) of songs and this one would pass "
                    + "its \(Mebibytes.limit(limit)) limit (read_budget_per_client_mib); wait for them to be read"
            }
        }
    }

    private struct State {
        var total = 0
        var byClient: [String: Int] = [:]
    }

    public let limits: SongReadLimits
    private let state = Mutex(State())

    public init(limits: SongReadLimits = .default) {
        self.limits = limits
    }

    /// Bytes reserved now, in all.
    public var held: Int { state.withLock { $0.total } }

    /// Bytes reserved now by `client`.
    public func held(by client: String) -> Int { state.withLock { $0.byClient[client, default: 0] } }

    /// One request's share: what it reserved, given back all at once by `releaseAll`.
    public func account(for client: String) -> Account { Account(budget: self, client: client) }

    fileprivate func reserve(_ bytes: Int, for client: String) -> Refusal? {
        state.withLock { state in
            let mine = state.byClient[client, default: 0]
            if mine + bytes > limits.perClient { return .perClient(held: mine, asked: bytes, limit: limits.perClient) }
            if state.total + bytes > limits.total { return .total(held: state.total, asked: bytes, limit: limits.total) }
            state.total += bytes
            state.byClient[client] = mine + bytes
            return nil
        }
    }

    fileprivate func release(_ bytes: Int, for client: String) {
        guard bytes > 0 else { return }
        state.withLock { state in
            state.total -= bytes
            let left = state.byClient[client, default: 0] - bytes
            state.byClient[client] = left > 0 ? left : nil
        }
    }

    /// What one request holds of the budget. Its reservations grow as the song's buffer does;
    /// `releaseAll` (also run when the account goes away) gives everything back.
    public final class Account: Sendable {
        private let budget: SongReadBudget
        private let client: String
        private let reserved = Mutex(0)

        fileprivate init(budget: SongReadBudget, client: String) {
            self.budget = budget
            self.client = client
        }

        deinit { releaseAll() }

        /// Bytes this request holds.
        public var bytes: Int { reserved.withLock { $0 } }

        /// Reserves `bytes` more, or says which cap it would pass (reserving nothing).
        public func reserve(_ bytes: Int) -> Refusal? {
            guard bytes > 0 else { return nil }
            if let refusal = budget.reserve(bytes, for: client) { return refusal }
            reserved.withLock { $0 += bytes }
            return nil
        }

        /// Gives back everything this request holds.
        public func releaseAll() {
            let bytes = reserved.withLock { held in
                defer { held = 0 }
                return held
            }
            budget.release(bytes, for: client)
        }
    }
}
