/// Something that changed in the Bluetooth world, as BlueZ told us.
///
/// Why events rather than polling: reconnect policy reacts to a speaker appearing, an adapter
/// returning or bluetoothd restarting the moment it happens. Devices are named by address so a
/// subscriber never holds a path that an adapter re-plug would invalidate.
public enum BlueZEvent: Equatable, Sendable, CustomStringConvertible {
    case adapterAdded(Adapter)
    case adapterChanged(Adapter)
    /// The adapter's name (hci0) and address; its devices are gone with it.
    case adapterRemoved(name: String, address: BluetoothAddress?)
    case deviceAdded(Device)
    /// Coalesced: RSSI bursts during discovery arrive at most a few times a second per device.
    case deviceChanged(Device)
    case deviceRemoved(BluetoothAddress)
    case connected(BluetoothAddress)
    case disconnected(BluetoothAddress, DisconnectReason)
    /// org.bluez lost its owner: bluetoothd stopped or crashed. Everything cached is gone.
    /// Announced before the removals it causes (`disconnected`, `deviceRemoved`,
    /// `adapterRemoved`), so a subscriber knows them for its consequences, not adapters unplugged.
    case bluetoothdVanished
    /// org.bluez has an owner again (first start, or back after vanishing).
    case bluetoothdAppeared
    /// bluetoothd came back and our view is re-synchronised (agent re-registered, cache rebuilt).
    case bluetoothdRestarted

    /// The device this event is about, if it is about one device.
    public var deviceAddress: BluetoothAddress? {
        switch self {
        case .deviceAdded(let device), .deviceChanged(let device): return device.address
        case .deviceRemoved(let address), .connected(let address), .disconnected(let address, _): return address
        case .adapterAdded, .adapterChanged, .adapterRemoved, .bluetoothdVanished, .bluetoothdAppeared, .bluetoothdRestarted:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .adapterAdded(let adapter): return "adapter added: \(adapter)"
        case .adapterChanged(let adapter): return "adapter changed: \(adapter)"
        case .adapterRemoved(let name, let address):
            return "adapter removed: \(name)\(address.map { " \($0)" } ?? "")"
        case .deviceAdded(let device): return "device added: \(device)"
        case .deviceChanged(let device): return "device changed: \(device)"
        case .deviceRemoved(let address): return "device removed: \(address)"
        case .connected(let address): return "connected: \(address)"
        case .disconnected(let address, let reason): return "disconnected: \(address) (\(reason))"
        case .bluetoothdVanished: return "bluetoothd vanished"
        case .bluetoothdAppeared: return "bluetoothd appeared"
        case .bluetoothdRestarted: return "bluetoothd restarted"
        }
    }
}

/// Why a device's connection ended (`Device1.Disconnected` reasons, doc/org.bluez.Device.rst).
///
/// `.unspecified` is what we report when `Connected` went false without the signal (older BlueZ,
/// or the stock python-dbusmock template): the reconnect policy treats it like a link loss.
public enum DisconnectReason: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Link supervision timeout: the speaker went out of range or lost power.
    case timeout
    /// We (or another local client) ended it.
    case local
    /// The speaker ended it: switched off by its user, or taken by another device.
    case remote
    case authentication
    /// The local host is suspending.
    case suspend
    /// BlueZ said `org.bluez.Reason.Unknown`.
    case unknown
    /// No reason was given at all.
    case unspecified
    case other(String)

    public init(dbusName: String) {
        switch dbusName {
        case "org.bluez.Reason.Timeout": self = .timeout
        case "org.bluez.Reason.Local": self = .local
        case "org.bluez.Reason.Remote": self = .remote
        case "org.bluez.Reason.Authentication": self = .authentication
        case "org.bluez.Reason.Suspend": self = .suspend
        case "org.bluez.Reason.Unknown": self = .unknown
        default: self = .other(dbusName)
        }
    }

    public var description: String {
        switch self {
        case .timeout: return "link lost: the speaker went out of range or lost power"
        case .local: return "disconnected by this machine"
        case .remote: return "the speaker ended the connection (switched off or taken by another device)"
        case .authentication: return "authentication failed"
        case .suspend: return "disconnected for suspend"
        case .unknown: return "unknown reason"
        case .unspecified: return "no reason given"
        case .other(let name): return name
        }
    }
}
