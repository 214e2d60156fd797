/// A composer's control on the playing song as it travels (`Adjust(s name, s value)`): its name
/// (`seek`, `loop`, `tempo`, `transpose`, `mute`, `solo`, `unmute`) and its value as the person
/// wrote it (`17:3`, `+2`, `17-24`, `off`, `80%`, `-2`, `drums,10`, empty).
///
/// The words travel, not a parsed value, as the arrangement does at `play`: speakerd reads them
/// (Playback's `LiveControl`) whoever sent them, and composer-cli reads them first for an early
/// error.
public struct LiveControlRequest: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String = "") {
        self.name = name
        self.value = value
    }

    /// The longest name or value taken over the bus, in bytes.
    public static let maxBytes = 256
}
