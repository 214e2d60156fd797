/// Small Foundation-free string helpers shared by the config and address parsers.
extension StringProtocol {
    /// Drops leading and trailing spaces and tabs (Foundation-free, used by the parsers here).
    package func strippingBlanks() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" || first == "\r" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" { slice.removeLast() }
        return String(slice)
    }
}
