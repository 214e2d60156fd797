/// A Bluetooth device address as users type it and BlueZ prints it (`11:22:33:AA:BB:CC`).
///
/// Parsed once at the edge (CLI, config, D-Bus API) so a malformed address is rejected with a
/// clear sentence instead of travelling on to BlueZ and coming back as an opaque error.
public struct SpeakerAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The canonical upper-case form, six colon-separated hex pairs.
    public let text: String

    /// Accepts `:` or `-` separators and either case; stores the canonical upper-case form.
    public init(parsing raw: String) throws(SpeakerAddressError) {
        let trimmed = raw.strippingBlanks()
        let pairs = trimmed.split(separator: ":", omittingEmptySubsequences: false).count == 6
            ? trimmed.split(separator: ":", omittingEmptySubsequences: false)
            : trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard pairs.count == 6,
              pairs.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) })
        else { throw SpeakerAddressError(input: raw) }
        text = pairs.map { $0.uppercased() }.joined(separator: ":")
    }

    /// The BlueZ object-path form of the address (`dev_11_22_33_AA_BB_CC`).
    public var objectPathComponent: String {
        "dev_" + text.replacingColons(with: "_")
    }

    public var description: String { text }

    public static func < (lhs: SpeakerAddress, rhs: SpeakerAddress) -> Bool { lhs.text < rhs.text }
}

/// A string that is not a Bluetooth address.
public struct SpeakerAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    public let input: String
    public var description: String {
        "'\(input)' is not a Bluetooth address (expected six hex pairs such as 11:22:33:AA:BB:CC)"
    }
}

extension StringProtocol {
    /// Drops leading and trailing spaces and tabs (Foundation-free, used by the parsers here).
    func strippingBlanks() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" || first == "\r" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" { slice.removeLast() }
        return String(slice)
    }

    func replacingColons(with replacement: Character) -> String {
        String(map { $0 == ":" ? replacement : $0 })
    }
}
