/// What `composer-cli volume N | +N | -N` asks for: an absolute level or a step, in percent.
///
/// Parsed once, here, so the CLI, the D-Bus method (`SetVolume`, which takes the same text) and
/// the daemon agree on what "+5" means and on the range: an absolute level outside 0…100 is an
/// error (a typo such as 400 must not blast the speaker), a step is clamped (pressing "+10"
/// at 95 % gives 100 %, as a volume button would).
public enum VolumeChange: Equatable, Sendable, CustomStringConvertible {
    /// Set to this percent (0…100).
    case to(Int)
    /// Raise (positive) or lower (negative) by this many percentage points.
    case by(Int)

    /// Parses `40`, `+5` or `-5`.
    public init(parsing text: String) throws(VolumeChangeError) {
        let trimmed = text.strippingBlanks()
        let sign = trimmed.first.flatMap { "+-".contains($0) ? $0 : nil }
        let digits = sign == nil ? Substring(trimmed) : trimmed.dropFirst()
        // Digits only: Int("") and Int("+") fail, and "1e3" or " 4" are not volumes either.
        guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let amount = Int(digits) else {
            throw .malformed(text)
        }
        switch sign {
        case "+": self = .by(amount)
        case "-": self = .by(-amount)
        default:
            guard Self.range.contains(amount) else { throw .outOfRange(amount) }
            self = .to(amount)
        }
    }

    /// The volumes a speaker can be set to, in percent.
    public static let range = 0...100

    /// The level this change gives from `current` percent, within `range`.
    public func applied(to current: Int) -> Int {
        switch self {
        case .to(let percent): min(max(percent, Self.range.lowerBound), Self.range.upperBound)
        case .by(let step): min(max(current + step, Self.range.lowerBound), Self.range.upperBound)
        }
    }

    /// The text `init(parsing:)` reads back (`40`, `+5`, `-5`): what `SetVolume` is sent.
    public var description: String {
        switch self {
        case .to(let percent): "\(percent)"
        case .by(let step): step < 0 ? "\(step)" : "+\(step)"
        }
    }
}

/// Why a volume argument was refused.
public enum VolumeChangeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not `N`, `+N` or `-N`.
    case malformed(String)
    /// An absolute level outside 0…100.
    case outOfRange(Int)

    public var description: String {
        switch self {
        case .malformed(let text):
            "'\(text.truncatedUTF8(to: 20))' is not a volume: give a percent from 0 to 100, or +N / -N to change it"
        case .outOfRange(let percent):
            "volume \(percent) is out of range: give a percent from 0 to 100"
        }
    }
}
