/// Byte amounts as a person reads them in a refusal: "100.0 MiB", and limits as whole MiB
/// ("16 MiB") when they are. Raw byte counts ("104857600 bytes") make a reader do arithmetic to
/// see how far over a limit they are.
package enum Mebibytes {
    package static let one = 1 << 20

    /// An amount, with one decimal: "15.3 MiB" (a small amount still says "0.1 MiB", never "0.0").
    package static func amount(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + one - 1) / one
        return "\(tenths / 10).\(tenths % 10) MiB"
    }

    /// A limit: whole MiB when it is a whole number of them ("64 MiB"), else as an amount.
    package static func limit(_ bytes: Int) -> String {
        bytes % one == 0 ? "\(bytes / one) MiB" : amount(bytes)
    }
}
