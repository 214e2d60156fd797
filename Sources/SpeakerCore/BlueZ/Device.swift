/// A remote Bluetooth device (`org.bluez.Device1`) as last reported by BlueZ.
///
/// Keyed by `address`, never by object path: the path embeds the adapter (hci0) and so changes
/// when the adapter is re-plugged. Every property is optional or has BlueZ's documented default,
/// because BlueZ omits properties it does not know yet (RSSI outside discovery, Name before inquiry).
public struct Device: Equatable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    /// The adapter it belongs to, by name (hci0), for display; may change across adapter re-plugs.
    public var adapterName: String
    public var name: String?
    public var alias: String?
    public var icon: String?
    public var deviceClass: UInt32?
    public var appearance: UInt16?
    public var paired: Bool
    public var bonded: Bool
    public var trusted: Bool
    public var blocked: Bool
    public var connected: Bool
    public var servicesResolved: Bool
    public var legacyPairing: Bool
    public var uuids: [String]
    public var rssi: Int16?
    public var txPower: Int16?
    public var manufacturerData: [UInt16: [UInt8]]

    public init(
        address: BluetoothAddress, adapterName: String = "hci0", name: String? = nil, alias: String? = nil,
        icon: String? = nil, deviceClass: UInt32? = nil, appearance: UInt16? = nil, paired: Bool = false,
        bonded: Bool = false, trusted: Bool = false, blocked: Bool = false, connected: Bool = false,
        servicesResolved: Bool = false, legacyPairing: Bool = false, uuids: [String] = [],
        rssi: Int16? = nil, txPower: Int16? = nil, manufacturerData: [UInt16: [UInt8]] = [:]
    ) {
        self.address = address
        self.adapterName = adapterName
        self.name = name
        self.alias = alias
        self.icon = icon
        self.deviceClass = deviceClass
        self.appearance = appearance
        self.paired = paired
        self.bonded = bonded
        self.trusted = trusted
        self.blocked = blocked
        self.connected = connected
        self.servicesResolved = servicesResolved
        self.legacyPairing = legacyPairing
        self.uuids = uuids
        self.rssi = rssi
        self.txPower = txPower
        self.manufacturerData = manufacturerData
    }

    /// What a person would call it: the alias BlueZ chose (user-set or remote name), else the address.
    public var displayName: String {
        if let alias, !alias.isEmpty { return alias }
        if let name, !name.isEmpty { return name }
        return address.description
    }

    /// Whether (and why) this device can be offered as a speaker.
    public var audioSink: AudioSinkClassifier.Verdict {
        AudioSinkClassifier.classify(.init(uuids: uuids, deviceClass: deviceClass, icon: icon))
    }

    public var description: String {
        "\(address) \"\(displayName)\"\(connected ? " connected" : "")\(paired ? " paired" : "")"
    }
}
