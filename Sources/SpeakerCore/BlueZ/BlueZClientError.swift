/// Why a BlueZ operation failed, at the level speakerd's users think in.
public enum BlueZClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// bluetoothd answered with an `org.bluez.Error.*`.
    case bluez(BlueZError, operation: String)
    /// Nobody owns `org.bluez`: bluetoothd is not running.
    case bluetoothdNotRunning
    /// bluetoothd runs but lacks what speakerd needs: `found` names what the bus shows
    /// (e.g. "BlueZ 4 (org.bluez.Manager)"), `needed` the oldest BlueZ that works ("5.30").
    case unsupportedBlueZ(found: String, needed: String)
    /// bluetoothd runs but has no adapter.
    case noAdapter
    /// The named adapter is not (or no longer) known.
    case unknownAdapter(BluetoothAddress)
    /// rfkill blocks the adapter: powering it on cannot work.
    case adapterBlocked(name: String)
    /// BlueZ does not know a device with this address (never discovered, or removed).
    case unknownDevice(BluetoothAddress)
    /// The operation did not finish in time; it was cancelled.
    case timedOut(operation: String, after: Duration)
    /// The D-Bus conversation itself failed (connection lost, malformed reply).
    case bus(String)

    public var description: String {
        switch self {
        case .bluez(let error, let operation):
            return "\(operation) failed: \(error)"
        case .bluetoothdNotRunning:
            return "bluetoothd is not running (nobody owns org.bluez on the system bus): start bluetooth.service"
        case .unsupportedBlueZ(let found, let needed):
            return "\(found) found; speakerd needs BlueZ \(needed) or newer: upgrade the bluez package"
        case .noAdapter:
            return "no Bluetooth adapter: plug one in, or check `rfkill list` and the kernel driver"
        case .unknownAdapter(let address):
            return "Bluetooth adapter \(address) is not present (unplugged?)"
        case .adapterBlocked(let name):
            return "Bluetooth adapter \(name) is blocked by rfkill: run `rfkill unblock bluetooth`"
        case .unknownDevice(let address):
            return "BlueZ does not know device \(address): scan for it first"
        case .timedOut(let operation, let after):
            return "\(operation) did not finish within \(after); gave up"
        case .bus(let detail):
            return "D-Bus error talking to BlueZ: \(detail)"
        }
    }

    /// The BlueZ error, when there is one.
    public var bluezError: BlueZError? {
        if case .bluez(let error, _) = self { return error }
        return nil
    }
}
