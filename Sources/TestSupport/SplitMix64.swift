/// SplitMix64: a tiny seeded random source, so a randomised test case (fuzz input, backoff
/// jitter, a readiness model run) can be replayed exactly from its seed.
///
/// One shared copy for every test target: the Readiness, MIDI and Daemon tests each had their
/// own. The constants are Steele, Lea and Flood's (the generator Java's SplittableRandom uses).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
