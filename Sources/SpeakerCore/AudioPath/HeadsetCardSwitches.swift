import Synchronization

/// The speaker's cards speakerd switched from a headset profile (HSP/HFP) to A2DP, as one warning
/// each for `status`.
///
/// While the path waits, its reason says the card was switched; once the A2DP sink comes the
/// path is ready and its reason is gone, but the user should still learn that the speaker came
/// up as a headset (it may do so again, e.g. after a phone call). So each switch is kept here
/// while its card is on the sound server: at most one warning per card, and a reconnect (a new
/// card) replaces the old one, so the list cannot grow.
public final class HeadsetCardSwitches: Sendable {
    private let notes = Mutex<[UInt32: String]>([:])

    public init() {}

    /// The warnings, one per card still on the server, oldest card first.
    public var warnings: [String] {
        notes.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
    }

    /// Notes that `card` was switched, saying so in `warning`.
    func record(_ warning: String, card: UInt32) {
        notes.withLock { $0[card] = warning }
    }

    /// Forgets the cards no longer on the server (the speaker disconnected, or the card went).
    func keepOnly(_ cards: [UInt32]) {
        notes.withLock { notes in notes = notes.filter { cards.contains($0.key) } }
    }

    /// Forgets every card: the path now follows another speaker, or another backend.
    func forgetAll() {
        notes.withLock { $0 = [:] }
    }
}
