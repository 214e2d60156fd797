internal import CBlueZ
#if canImport(Glibc)
import Glibc
#endif

/// One HCI controller as the kernel sees it.
public struct KernelHCIController: Equatable, Sendable, CustomStringConvertible {
    /// The kernel index: 0 for hci0. It changes when a USB dongle is unplugged and replugged.
    public let index: Int
    /// `hci0`, `hci1`, …
    public let name: String
    /// The controller's own address, when the kernel knows it already.
    public let address: BluetoothAddress?
    /// Whether the controller is up (`HCI_UP`); bluetoothd powers it up, so down often means rfkill.
    public let isUp: Bool

    public var description: String {
        "\(name) \(address.map { "\($0)" } ?? "(no address)") \(isUp ? "up" : "down")"
    }
}

/// What the kernel says about Bluetooth, independently of bluetoothd.
public enum KernelBluetoothListing: Equatable, Sendable, CustomStringConvertible {
    /// The kernel has no Bluetooth support at all (`socket(AF_BLUETOOTH)` fails with EAFNOSUPPORT).
    case noBluetoothInKernel
    /// The kernel has Bluetooth; this is every controller it knows (possibly none).
    case controllers([KernelHCIController])
    /// The kernel has Bluetooth but would not tell us, e.g. a sandbox denied the socket.
    case unavailable(operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .noBluetoothInKernel:
            return "no Bluetooth in this kernel (AF_BLUETOOTH is not supported; load the bluetooth module or use a kernel built with it)"
        case .controllers(let list) where list.isEmpty:
            return "the kernel has Bluetooth but no controller: is a Bluetooth adapter plugged in and not blocked?"
        case .controllers(let list):
            return list.map(\.description).joined(separator: "\n")
        case .unavailable(let operation, let code):
            return "cannot list kernel Bluetooth controllers: \(operation) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// Kernel-level Bluetooth diagnostics through libbluetooth.
///
/// Why: when bluetoothd is down or has no adapter, the kernel can still tell a user whether a
/// controller exists at all. That turns "no adapter" into either "start bluetoothd" or "plug one in".
public enum KernelBluetooth {
    /// `_IOR('H', 210, int)`: the header's macro cannot be imported into Swift, so it is spelled out.
    static let getDeviceListRequest: UInt = (2 << 30) | (UInt(MemoryLayout<Int32>.size) << 16) | (0x48 << 8) | 210
    /// `HCI_MAX_DEV` from hci.h.
    static let maximumControllers = 16
    /// `HCI_UP` is bit 0 of `hci_dev_info.flags`.
    static let upFlag: UInt32 = 1 << 0

    /// Lists the controllers the kernel knows. Never throws and never crashes: a kernel without
    /// Bluetooth is a normal answer, not a failure.
    public static func listControllers() -> KernelBluetoothListing {
        let socketType = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let descriptor = socket(AF_BLUETOOTH, socketType, BTPROTO_HCI)
        if descriptor < 0 {
            return classify(socketErrno: errno)
        }
        defer { close(descriptor) }

        // struct hci_dev_list_req: uint16 dev_num, then dev_req[] of {uint16 dev_id; uint32 dev_opt} at offset 4.
        let entrySize = 8
        let headerSize = 4
        var buffer = [UInt8](repeating: 0, count: headerSize + maximumControllers * entrySize)
        let result: Int32 = buffer.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt16(maximumControllers), toByteOffset: 0, as: UInt16.self)
            return ioctl(descriptor, getDeviceListRequest, raw.baseAddress!)
        }
        if result < 0 {
            return .unavailable(operation: "HCIGETDEVLIST", errno: errno)
        }
        let ids: [Int] = buffer.withUnsafeBytes { raw in
            let count = min(Int(raw.load(fromByteOffset: 0, as: UInt16.self)), maximumControllers)
            return (0..<count).map { Int(raw.load(fromByteOffset: headerSize + $0 * entrySize, as: UInt16.self)) }
        }
        return .controllers(ids.map(describeController))
    }

    /// Maps the errno of a failed `socket(AF_BLUETOOTH)` to an answer.
    static func classify(socketErrno code: Int32) -> KernelBluetoothListing {
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return .noBluetoothInKernel
        default:
            return .unavailable(operation: "socket(AF_BLUETOOTH)", errno: code)
        }
    }

    private static func describeController(index: Int) -> KernelHCIController {
        var info = hci_dev_info()
        guard hci_devinfo(Int32(index), &info) == 0 else {
            return KernelHCIController(index: index, name: "hci\(index)", address: nil, isUp: false)
        }
        let name = withUnsafeBytes(of: info.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let littleEndian = withUnsafeBytes(of: info.bdaddr.b) { Array($0) }
        let address: BluetoothAddress? = littleEndian.allSatisfy { $0 == 0 }
            ? nil : BluetoothAddress(displayOrder: littleEndian.reversed())
        return KernelHCIController(
            index: index,
            name: name.isEmpty ? "hci\(index)" : name,
            address: address,
            isUp: info.flags & upFlag != 0
        )
    }
}
