import DequeModule

extension ReadinessGate {
    @usableFromInline
    struct Waiter {
        @usableFromInline let level: Level
        @usableFromInline let continuation: UnsafeContinuation<Void, any Error>
    }

    /// A polite block whose level was reached, waiting for its turn.
    @usableFromInline
    struct PoliteTurn {
        @usableFromInline let level: Level
        @usableFromInline let block: GateBlock

        @inlinable
        init(level: Level, block: GateBlock) {
            self.level = level
            self.block = block
        }
    }

    /// What one pass of a release hands to the releasing thread, to run outside the lock:
    /// groups of blocks in order (each a bucket's hooks or blocks, moved out without copying).
    @usableFromInline
    struct Release {
        @usableFromInline var groups: [[GateBlock]] = []
        @usableFromInline var waiters: [UnsafeContinuation<Void, any Error>] = []
        @usableFromInline var startPoliteRunner = false

        @inlinable init() {}

        @inlinable
        var isEmpty: Bool { groups.isEmpty && waiters.isEmpty && !startPoliteRunner }
    }

    /// Everything the gate knows, guarded by its one mutex.
    ///
    /// `@usableFromInline` down to its fields: the gate's hot paths are inlinable (see
    /// ``ReadinessGate``), and they read and change this state in the caller's module.
    @usableFromInline
    struct GateState {
        // Fields that do not depend on `Level` come first: their offsets are then fixed, so even
        // unspecialised generic code reaches them without asking the runtime for the layout.
        @usableFromInline var nextSequence: UInt64 = 0
        @usableFromInline var pendingBlocks: [PendingBlocks] = []
        /// A thread is running released blocks; later registrations queue behind it.
        @usableFromInline var releasing = false
        @usableFromInline var politeRunnerActive = false
        /// The runner's task, so `cancelPoliteBlocks` can stop it (may name one that has ended).
        @usableFromInline var politeRunner: Task<Void, Never>?
        @usableFromInline var nextWaiterID: UInt64 = 0
        /// Levels that have blocks waiting, lowest first; `pendingBlocks[i]` waits for `pendingLevels[i]`.
        /// Filing blocks by level makes a release cheap: whole buckets whose level is reached
        /// are taken at once, in level order, with no per-block comparison or sort.
        @usableFromInline var pendingLevels: [Level] = []
        @usableFromInline var waiters: [UInt64: Waiter] = [:]
        /// Polite blocks whose level is reached, waiting for their turn.
        @usableFromInline var politeQueue: Deque<PoliteTurn> = []
        @usableFromInline var level: Level

        init(level: Level) { self.level = level }

        @inlinable
        mutating func makeBlock(_ label: BlockLabel, _ work: GateWork) -> GateBlock {
            defer { nextSequence &+= 1 }
            return GateBlock(sequence: nextSequence, label: label, work: work)
        }

        var pendingBlockCount: Int { pendingBlocks.reduce(0) { $0 + $1.count } }

        /// Files a block under its level, creating the bucket in level order if needed.
        ///
        /// The block is taken `consuming` (as is ``PendingBlocks/append(_:_:)``'s) so it moves into
        /// its bucket: borrowed, the registration inlined into a caller's module copied it and
        /// released the original, a retain/release pair per registration (6 % of a deferred one).
        @inlinable @discardableResult
        mutating func file(_ block: consuming GateBlock, at level: Level, _ phase: GatePhase) -> Int {
            var index = pendingLevels.startIndex
            while index < pendingLevels.endIndex {
                let existing = pendingLevels[index]
                if existing == level {
                    pendingBlocks[index].append(block, phase)
                    return index
                }
                if level < existing { break }
                index += 1
            }
            var blocks = PendingBlocks()
            blocks.append(block, phase)
            pendingLevels.insert(level, at: index)
            pendingBlocks.insert(blocks, at: index)
            return index
        }

        /// Puts a polite block back under its level after a drop, in registration order.
        mutating func refilePolite(_ turn: PoliteTurn) {
            let index = file(turn.block, at: turn.level, .polite)
            pendingBlocks[index].polite.sort { $0.sequence < $1.sequence }
        }

        /// Queues a polite block whose level is reached; says whether a runner must be started.
        @inlinable
        mutating func enqueuePolite(_ block: GateBlock, at level: Level) -> Bool {
            politeQueue.append(PoliteTurn(level: level, block: block))
            guard !politeRunnerActive else { return false }
            politeRunnerActive = true
            return true
        }

        /// Removes and returns, in release order, everything the current level releases.
        @inlinable
        mutating func takeReleasable() -> Release {
            var release = Release()
            while let lowest = pendingLevels.first, lowest <= level {
                pendingLevels.removeFirst()
                let bucket = pendingBlocks.removeFirst()
                if !bucket.hooks.isEmpty { release.groups.append(bucket.hooks) }
                if !bucket.blocks.isEmpty { release.groups.append(bucket.blocks) }
                for block in bucket.polite where enqueuePolite(block, at: lowest) {
                    release.startPoliteRunner = true
                }
            }
            if !waiters.isEmpty {
                for (id, waiter) in waiters where waiter.level <= level {
                    waiters.removeValue(forKey: id)
                    release.waiters.append(waiter.continuation)
                }
            }
            return release
        }
    }
}
