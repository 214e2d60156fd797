import DequeModule

extension ReadinessGate {
    /// When a block runs relative to the others of its level.
    enum Phase: UInt8, Comparable {
        case willReach, didReach, polite
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    enum Work: Sendable {
        case sync(@Sendable () -> Void)
        case polite(@Sendable () async -> Void)
    }

    /// One registered block; `sequence` is its registration order.
    struct Entry: Sendable {
        let sequence: UInt64
        let level: Level
        let phase: Phase
        let label: BlockLabel
        let work: Work

        /// Release order: lower levels first, hooks before blocks, then registration order.
        func precedes(_ other: Entry) -> Bool {
            if level != other.level { return level < other.level }
            if phase != other.phase { return phase < other.phase }
            return sequence < other.sequence
        }
    }

    struct Waiter {
        let level: Level
        let continuation: UnsafeContinuation<Void, any Error>
    }

    /// What one pass of a release hands to the releasing thread, to run outside the lock.
    struct Release {
        var blocks: [Entry] = []
        var waiters: [UnsafeContinuation<Void, any Error>] = []
        var startPoliteRunner = false

        var isEmpty: Bool { blocks.isEmpty && waiters.isEmpty && !startPoliteRunner }
    }

    /// Everything the gate knows, guarded by its one mutex.
    struct GateState {
        var level: Level
        var nextSequence: UInt64 = 0
        /// Blocks whose level has not been reached (or that a release has yet to pick up).
        var pending: [Entry] = []
        /// A thread is running released blocks; later registrations queue behind it.
        var releasing = false
        var nextWaiterID: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        /// Polite blocks whose level is reached, waiting for their turn.
        var politeQueue: Deque<Entry> = []
        var politeRunnerActive = false

        init(level: Level) { self.level = level }

        mutating func makeEntry(_ level: Level, _ phase: Phase, _ label: BlockLabel, _ work: Work) -> Entry {
            defer { nextSequence &+= 1 }
            return Entry(sequence: nextSequence, level: level, phase: phase, label: label, work: work)
        }

        /// Queues a polite block whose level is reached; says whether a runner must be started.
        mutating func enqueuePolite(_ entry: Entry) -> Bool {
            politeQueue.append(entry)
            guard !politeRunnerActive else { return false }
            politeRunnerActive = true
            return true
        }

        /// Removes and returns, in release order, everything the current level releases.
        mutating func takeReleasable() -> Release {
            var release = Release()
            if !pending.isEmpty {
                var taken: [Entry]
                if pending.allSatisfy({ $0.level <= level }) {
                    taken = pending
                    pending = []
                } else {
                    taken = []
                    var kept: [Entry] = []
                    for entry in pending {
                        if entry.level <= level { taken.append(entry) } else { kept.append(entry) }
                    }
                    pending = kept
                }
                if !Self.isOrdered(taken) { taken.sort { $0.precedes($1) } }
                if taken.contains(where: { $0.phase == .polite }) {
                    for entry in taken where entry.phase == .polite {
                        if enqueuePolite(entry) { release.startPoliteRunner = true }
                    }
                    taken.removeAll { $0.phase == .polite }
                }
                release.blocks = taken
            }
            if !waiters.isEmpty {
                for (id, waiter) in waiters where waiter.level <= level {
                    waiters.removeValue(forKey: id)
                    release.waiters.append(waiter.continuation)
                }
            }
            return release
        }

        private static func isOrdered(_ entries: [Entry]) -> Bool {
            var index = entries.startIndex
            while index + 1 < entries.endIndex {
                if entries[index + 1].precedes(entries[index]) { return false }
                index += 1
            }
            return true
        }
    }
}
