/// When a gate block runs relative to the others of its level.
enum GatePhase: UInt8, Sendable {
    case willReach, didReach, polite
}

/// The work of a gate block.
enum GateWork: Sendable {
    case sync(@Sendable () -> Void)
    case polite(@Sendable () async -> Void)
}

/// One registered block, without its level: the gate files blocks in per-level buckets, so this
/// type does not depend on the gate's generic `Level`. That keeps its layout fixed, which makes
/// appending one (the registration hot path) a plain copy even in unspecialised generic code.
struct GateBlock: Sendable {
    /// Registration order, used to put a polite block back in its place after a drop.
    let sequence: UInt64
    let label: BlockLabel
    let work: GateWork
}
