/// The levels these tests gate work on: a service that starts, comes online, finds its device,
/// connects to it, and is then ready for requests.
///
/// The gate takes any `Comparable` levels and knows no owner's. These have the shape a real
/// owner's have (named stages whose order lives in ``rank``, not in their names, and whose
/// `description` is the name an error message prints), without borrowing a type from a module
/// above Readiness.
enum Stage: String, Comparable, CaseIterable, Sendable, CustomStringConvertible {
    case started
    case online
    case deviceFound
    case connected
    case ready

    /// Position in start-up order, lowest first.
    var rank: Int {
        switch self {
        case .started: 0
        case .online: 1
        case .deviceFound: 2
        case .connected: 3
        case .ready: 4
        }
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

    var description: String { rawValue }
}
