import Synchronization

/// The method handlers of one connection that are still running, by caller.
///
/// Two jobs, both at the API edge: admission (calls to bounded methods beyond the object's
/// `DBusCallLimits` are refused before they start) and cancellation (when a caller leaves
/// the bus, e.g. `composer-cli play --wait` stopped with Ctrl-C, the tasks still working for
/// it are cancelled, so a request nobody waits for any more never plays later).
final class DBusPendingCalls: Sendable {
    /// Why a call was not admitted.
    enum Refusal: Error, Equatable {
        case senderFull(limit: Int)
        case totalFull(limit: Int)
    }

    private struct Entry {
        var bounded: Bool
        var task: Task<Void, Never>?
    }

    private struct State {
        var bySender: [String: [UInt64: Entry]] = [:]
        var boundedBySender: [String: Int] = [:]
        var boundedTotal = 0
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Reserves a slot for a call from `sender`; the caller then `attach`es its task and
    /// `finish`es the slot when the handler returns.
    func admit(sender: String, bounded: Bool, limits: DBusCallLimits?) -> Result<UInt64, Refusal> {
        state.withLock { state in
            if bounded, let limits {
                if state.boundedBySender[sender, default: 0] >= limits.perSender { return .failure(.senderFull(limit: limits.perSender)) }
                if state.boundedTotal >= limits.total { return .failure(.totalFull(limit: limits.total)) }
            }
            state.nextID += 1
            state.bySender[sender, default: [:]][state.nextID] = Entry(bounded: bounded)
            if bounded {
                state.boundedBySender[sender, default: 0] += 1
                state.boundedTotal += 1
            }
            return .success(state.nextID)
        }
    }

    /// Records the task running call `id`, unless it has already finished.
    func attach(_ task: Task<Void, Never>, to id: UInt64, sender: String) {
        state.withLock { state in
            guard state.bySender[sender]?[id] != nil else { return }
            state.bySender[sender]?[id]?.task = task
        }
    }

    /// Releases call `id`'s slot.
    func finish(_ id: UInt64, sender: String) {
        state.withLock { state in
            guard let entry = state.bySender[sender]?.removeValue(forKey: id) else { return }
            if state.bySender[sender]?.isEmpty == true { state.bySender[sender] = nil }
            if entry.bounded {
                state.boundedTotal -= 1
                let left = state.boundedBySender[sender, default: 1] - 1
                state.boundedBySender[sender] = left > 0 ? left : nil
            }
        }
    }

    /// `sender` left the bus: cancels every handler still running for it.
    func senderLeft(_ sender: String) {
        let tasks = state.withLock { state in state.bySender[sender]?.values.compactMap(\.task) ?? [] }
        for task in tasks { task.cancel() }
    }

    /// The connection ended (closed by us or lost): nobody can receive these handlers'
    /// replies any more, so every one still running is cancelled rather than left to finish
    /// (or to wait, suspended, for an event that will never come) after its connection is gone.
    func cancelAll() {
        let tasks = state.withLock { state in state.bySender.values.flatMap { $0.values.compactMap(\.task) } }
        for task in tasks { task.cancel() }
    }

    /// Calls still running (bounded ones only, or all).
    func count(boundedOnly: Bool) -> Int {
        state.withLock { state in boundedOnly ? state.boundedTotal : state.bySender.values.reduce(0) { $0 + $1.count } }
    }
}

extension DBusPendingCalls.Refusal {
    /// The error reply's text.
    func sentence(member: String) -> String {
        switch self {
        case .senderFull(let limit):
            "busy: this client already has \(limit) requests waiting; \(member) refused (wait for them to finish)"
        case .totalFull(let limit):
            "busy: \(limit) requests are already waiting; \(member) refused (try again shortly)"
        }
    }
}
