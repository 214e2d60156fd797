import AsyncSignals
/// How long to wait before the next reconnect attempt: exponential backoff with jitter.
///
/// Two schedules share one formula. `eager` is for links that died under us (timeout, or
/// `Connected` false with no reason) and for speakers unreachable at boot: start at about
/// a second, double, cap at `reconnectMax`. `gentle` is for speakers that ended the link
/// themselves (switched off, or taken by a phone): start later and grow slower, so we keep
/// the speaker in reach without stealing it back from its new owner in a tight loop.
public struct ReconnectSchedule: Equatable, Sendable {
    /// The first delay.
    public var initial: Duration
    /// Each further delay is the previous one times this.
    public var factor: Double
    /// No delay is longer than this, jitter included.
    public var cap: Duration
    /// Each delay is scaled by a random factor in `1 - jitter ... 1 + jitter`, so that several
    /// boxes (or several speakers) that lost power together do not retry in lockstep.
    public var jitter: Double

    public init(initial: Duration, factor: Double, cap: Duration, jitter: Double) {
        self.initial = initial
        self.factor = factor
        self.cap = cap
        self.jitter = jitter
    }

    /// After a lost link or an unreachable speaker at boot: ~1 s, 2 s, 4 s … up to `cap`.
    public static func eager(cap: Duration = .seconds(60)) -> ReconnectSchedule {
        ReconnectSchedule(initial: .seconds(1), factor: 2, cap: cap, jitter: 0.2)
    }

    /// After the speaker ended the link: ~5 s, 7.5 s, 11 s … up to `cap`.
    public static func gentle(cap: Duration = .seconds(60)) -> ReconnectSchedule {
        ReconnectSchedule(initial: .seconds(5), factor: 1.5, cap: cap, jitter: 0.2)
    }

    /// The delay before retry number `attempt` (0 for the first retry).
    public func delay(forAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let base = secondsOf(initial) * pow(factor, Double(min(attempt, 64)))
        let capped = min(base, secondsOf(cap))
        let scaled = capped * Double.random(in: (1 - jitter)...(1 + jitter), using: &random)
        return .milliseconds(Int64((min(scaled, secondsOf(cap)) * 1000).rounded()))
    }
}

/// A duration as floating-point seconds, for the backoff arithmetic.
func secondsOf(_ duration: Duration) -> Double {
    let (whole, fraction) = duration.components
    return Double(whole) + Double(fraction) / 1e18
}

/// `pow` without importing Foundation into this pure file.
private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    for _ in 0..<Int(exponent) { result *= base }
    return result
}
