/// A Bluetooth adapter (`org.bluez.Adapter1`) as last reported by BlueZ.
///
/// The adapter's object path is deliberately absent: it changes when the adapter comes back as hci1.
/// `name` (hci0, hci1) is for people; code identifies an adapter by its `address`.
public struct Adapter: Equatable, Sendable, CustomStringConvertible {
    /// `hci0`, `hci1`, …: the last element of the object path, for display only.
    public var name: String
    public var address: BluetoothAddress?
    public var alias: String?
    public var powered: Bool
    /// Newer BlueZ only (experimental); `nil` when bluetoothd does not send it.
    public var powerState: PowerState?
    public var discovering: Bool
    public var discoverable: Bool
    public var pairable: Bool
    public var uuids: [String]

    public init(
        name: String, address: BluetoothAddress?, alias: String? = nil, powered: Bool = false,
        powerState: PowerState? = nil, discovering: Bool = false, discoverable: Bool = false,
        pairable: Bool = false, uuids: [String] = []
    ) {
        self.name = name
        self.address = address
        self.alias = alias
        self.powered = powered
        self.powerState = powerState
        self.discovering = discovering
        self.discoverable = discoverable
        self.pairable = pairable
        self.uuids = uuids
    }

    /// Whether rfkill blocks it: powering it on cannot work until the user unblocks it.
    public var isBlocked: Bool { powerState == .offBlocked }

    public var description: String {
        let state = powerState.map { "\($0)" } ?? (powered ? "on" : "off")
        return "\(name) \(address.map { "\($0)" } ?? "(no address)") \(state)"
    }

    /// The `PowerState` property (doc/org.bluez.Adapter.rst).
    public enum PowerState: Equatable, Hashable, Sendable, CustomStringConvertible {
        case on, off, offEnabling, onDisabling, offBlocked
        case other(String)

        public init(_ text: String) {
            switch text {
            case "on": self = .on
            case "off": self = .off
            case "off-enabling": self = .offEnabling
            case "on-disabling": self = .onDisabling
            case "off-blocked": self = .offBlocked
            default: self = .other(text)
            }
        }

        public var description: String {
            switch self {
            case .on: return "on"
            case .off: return "off"
            case .offEnabling: return "off-enabling"
            case .onDisabling: return "on-disabling"
            case .offBlocked: return "off-blocked"
            case .other(let text): return text
            }
        }
    }
}
