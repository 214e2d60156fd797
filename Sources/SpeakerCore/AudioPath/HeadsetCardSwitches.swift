/// The speaker's cards speakerd switched from a headset profile (HSP/HFP) to A2DP, as one warning
/// each for `status`.
///
/// While the path waits, its reason says the card was switched; once the A2DP sink comes the
/// path is ready and its reason is gone, but the user should still learn that the speaker came
/// up as a headset (it may do so again, e.g. after a phone call). So the sound-server path keeps
/// each switch while its card is on the server and reports them with every state
/// (``AudioPathReport/warnings``): at most one warning per card, and a reconnect (a new card)
/// replaces the old one, so the list cannot grow.
struct HeadsetCardSwitches: Equatable, Sendable {
    private var notes: [UInt32: String] = [:]

    /// The warnings, one per card still on the server, oldest card first.
    var warnings: [String] {
        notes.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Notes that `card` was switched, saying so in `warning`.
    mutating func record(_ warning: String, card: UInt32) {
        notes[card] = warning
    }

    /// Forgets the cards no longer on the server (the speaker disconnected, or the card went).
    mutating func keepOnly(_ cards: [UInt32]) {
        notes = notes.filter { cards.contains($0.key) }
    }
}
