/// When a gate block runs relative to the others of its level.
@usableFromInline
enum GatePhase: UInt8, Sendable {
    case willReach, didReach, polite
}

/// The work of a gate block.
@usableFromInline
enum GateWork: Sendable {
    case sync(@Sendable () -> Void)
    /// `budget`: how long this block is expected to take; it is named as slow only past that
    /// (nil: the gate's threshold).
    case polite(@Sendable () async -> Void, budget: Duration?)
}

/// One registered block, without its level: the gate files blocks in per-level buckets, so this
/// type does not depend on the gate's generic `Level`. That keeps its layout fixed, which makes
/// appending one (the registration hot path) a plain copy even in unspecialised generic code.
@usableFromInline
struct GateBlock: Sendable {
    /// Registration order, used to put a polite block back in its place after a drop.
    @usableFromInline let sequence: UInt64
    @usableFromInline let label: BlockLabel
    @usableFromInline let work: GateWork

    @inlinable
    init(sequence: UInt64, label: BlockLabel, work: GateWork) {
        self.sequence = sequence
        self.label = label
        self.work = work
    }
}

/// The blocks waiting for one level, by phase, each in registration order.
///
/// Kept apart from the level itself (the gate holds levels and these in parallel arrays) so that
/// filing a block touches only non-generic storage, which stays fast even where the gate's
/// generic code is not specialised for the caller's level type.
@usableFromInline
struct PendingBlocks {
    @usableFromInline var hooks: [GateBlock] = []
    @usableFromInline var blocks: [GateBlock] = []
    @usableFromInline var polite: [GateBlock] = []

    @inlinable init() {}

    var count: Int { hooks.count + blocks.count + polite.count }

    @inlinable
    mutating func append(_ block: consuming GateBlock, _ phase: GatePhase) {
        switch phase {
        case .willReach: hooks.append(block)
        case .didReach: blocks.append(block)
        case .polite: polite.append(block)
        }
    }
}
