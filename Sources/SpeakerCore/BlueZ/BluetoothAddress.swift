internal import CBlueZ

/// A Bluetooth device address (BD_ADDR) such as `11:22:33:44:55:66`.
///
/// Addresses are what survive everything: an adapter re-appearing as hci1 changes every object path,
/// but never a speaker's address. So every lookup in the BlueZ layer is by address, never by a cached
/// path. Parsing goes through libbluetooth's `bachk`/`str2ba` (the same rules as `bluetoothctl`),
/// plus our own strictness: surrounding whitespace is refused and the all-zero and broadcast addresses
/// are rejected, because neither names a speaker a user could mean.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The six bytes in display order (the first byte is the one printed first).
    public let bytes: [UInt8]

    /// Parses `11:22:33:44:55:66` (case-insensitive).
    /// - Throws: `BluetoothAddressError` naming what is wrong with the text.
    public init(_ text: String) throws(BluetoothAddressError) {
        guard text.utf8.count == 17 else {
            throw BluetoothAddressError(input: text, problem: .wrongLength(text.utf8.count))
        }
        for (index, byte) in text.utf8.enumerated() {
            let isSeparatorPosition = index % 3 == 2
            if isSeparatorPosition, byte != UInt8(ascii: ":") {
                throw BluetoothAddressError(input: text, problem: .expectedColon(position: index + 1))
            }
            if !isSeparatorPosition, !Self.isHexDigit(byte) {
                throw BluetoothAddressError(input: text, problem: .notHex(position: index + 1))
            }
        }
        // libbluetooth has the final word on syntax, so what we accept is what BlueZ itself accepts.
        guard bachk(text) == 0 else {
            throw BluetoothAddressError(input: text, problem: .rejectedByLibbluetooth)
        }
        var raw = bdaddr_t()
        guard str2ba(text, &raw) == 0 else {
            throw BluetoothAddressError(input: text, problem: .rejectedByLibbluetooth)
        }
        // bdaddr_t stores the address little-endian: b[0] is the last printed byte.
        let littleEndian = withUnsafeBytes(of: raw.b) { Array($0) }
        let bytes = Array(littleEndian.reversed())
        if bytes.allSatisfy({ $0 == 0x00 }) {
            throw BluetoothAddressError(input: text, problem: .anyAddress)
        }
        if bytes.allSatisfy({ $0 == 0xFF }) {
            throw BluetoothAddressError(input: text, problem: .broadcastAddress)
        }
        self.bytes = bytes
    }

    /// Builds an address from six bytes in display order; used for addresses read from the kernel.
    init(displayOrder bytes: [UInt8]) {
        precondition(bytes.count == 6, "a Bluetooth address has six bytes")
        self.bytes = bytes
    }

    /// Upper-case, colon-separated: the form BlueZ uses in its `Address` property.
    public var description: String {
        bytes.map { Self.hex($0) }.joined(separator: ":")
    }

    /// The object-path element BlueZ gives a device with this address (`dev_11_22_33_44_55_66`).
    public var devicePathElement: String {
        "dev_" + bytes.map { Self.hex($0) }.joined(separator: "_")
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = try BluetoothAddress(text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}

/// Why a piece of text is not a Bluetooth address.
public struct BluetoothAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Problem: Equatable, Sendable {
        case wrongLength(Int)
        case expectedColon(position: Int)
        case notHex(position: Int)
        case rejectedByLibbluetooth
        case anyAddress
        case broadcastAddress
    }

    public let input: String
    public let problem: Problem

    public var description: String {
        let shown = input.count > 40 ? String(input.prefix(40)) + "…" : input
        let why: String
        switch problem {
        case .wrongLength(let length):
            why = "it has \(length) characters, an address has 17"
        case .expectedColon(let position):
            why = "character \(position) should be ':'"
        case .notHex(let position):
            why = "character \(position) is not a hexadecimal digit"
        case .rejectedByLibbluetooth:
            why = "libbluetooth does not accept it"
        case .anyAddress:
            why = "00:00:00:00:00:00 means \"any device\", not a speaker"
        case .broadcastAddress:
            why = "FF:FF:FF:FF:FF:FF is the broadcast address, not a speaker"
        }
        return "'\(shown)' is not a Bluetooth address (\(why)); expected the form 11:22:33:44:55:66"
    }
}
