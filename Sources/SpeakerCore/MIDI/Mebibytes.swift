/// Byte amounts as a person reads them in a refusal: "100.0 MiB", and limits as whole MiB
/// ("16 MiB") when they are. Raw byte counts ("104857600 bytes") make a reader do arithmetic to
/// see how far over a limit they are.
package enum Mebibytes {
    package static let one = 1 << 20

    /// An amount to the nearest tenth: "15.3 MiB" (a small amount still says "0.1 MiB", never
    /// "0.0"). Whole MiB and the rest are taken apart first, so no amount, however large (a
    /// directory's or a device's reported size), overflows.
    package static func amount(_ bytes: Int) -> String {
        let bytes = max(0, bytes)
        var whole = bytes / one
        var tenths = (bytes % one * 10 + one / 2) / one
        if tenths == 10 { (whole, tenths) = (whole + 1, 0) }
        if whole == 0, tenths == 0, bytes > 0 { tenths = 1 }
        return "\(whole).\(tenths) MiB"
    }

    /// An amount refused for being over `limit`: as `amount`, with the exact bytes beside it when
    /// the tenths alone would make it look no larger than the limit ("100.0 MiB (104857620
    /// bytes)", never "100.1 MiB" for a file 20 bytes over).
    package static func amount(_ bytes: Int, over limit: Int) -> String {
        let text = amount(bytes)
        return bytes > limit && text == amount(limit) ? "\(text) (\(bytes) bytes)" : text
    }

    /// A limit: whole MiB when it is a whole number of them ("64 MiB"), else as an amount.
    package static func limit(_ bytes: Int) -> String {
        bytes % one == 0 ? "\(bytes / one) MiB" : amount(bytes)
    }
}
