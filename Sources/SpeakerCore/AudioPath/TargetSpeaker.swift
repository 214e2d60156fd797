import BlueZ

/// The speaker songs play to, as the daemon names it to its player: its address (which output
/// and device belong to it) and its name (for the log and messages).
public struct TargetSpeaker: Equatable, Sendable {
    public var address: BluetoothAddress
    public var name: String

    public init(address: BluetoothAddress, name: String) {
        self.address = address
        self.name = name
    }
}
