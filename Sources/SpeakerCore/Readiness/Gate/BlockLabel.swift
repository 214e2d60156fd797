/// Names a block handed to a readiness primitive, so a slow or misbehaving one can be found.
///
/// The default is the caller's `file:line`. It is kept as a static string and a number, and only
/// formatted when someone reads it, because registrations sit on start-up's hot path and a
/// string interpolation per registration would cost more than the registration itself.
@usableFromInline
struct BlockLabel: Sendable, CustomStringConvertible {
    @usableFromInline
    enum Storage: Sendable {
        case source(fileID: StaticString, line: UInt)
        case custom(String)
    }

    @usableFromInline let storage: Storage

    /// A label given by the caller, e.g. `"warm the cache"`.
    init(_ text: String) { storage = .custom(text) }

    /// A label that points at the registering source line.
    init(fileID: StaticString, line: UInt) { storage = .source(fileID: fileID, line: line) }

    /// The custom text when one was given, else the source location.
    @inlinable
    init(_ text: String?, fileID: StaticString, line: UInt) {
        if let text { storage = .custom(text) } else { storage = .source(fileID: fileID, line: line) }
    }

    @usableFromInline
    var description: String {
        switch storage {
        case let .source(fileID, line): "\(fileID):\(line)"
        case let .custom(text): text
        }
    }
}
