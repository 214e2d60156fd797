/// Finding a fixed piece of text in a string with the standard library's core only.
///
/// Not `firstRange(of:)` or `contains(_:)` on strings: those live in _StringProcessing, whose code
/// is one 387 KB section in the toolchain's static library, and the few of its functions a search
/// runs sit far apart in it. Called at every start (the BlueZ introspection check), they kept
/// about 0.2 MiB of it resident in an idle daemon (docs/BENCHMARKS.md, "Start-up").
extension Substring {
    /// The range of the first occurrence of `needle`, found by comparing UTF-8 bytes; nil when it
    /// does not occur, and an empty range at the start for an empty needle. Byte equality is the
    /// right test for the protocol texts searched here (XML attribute names, BlueZ messages): two
    /// spellings of "é" that Unicode calls equal are different texts to a program.
    func firstRange(ofText needle: String) -> Range<String.Index>? {
        let pattern = Array(needle.utf8)
        guard let first = pattern.first else { return startIndex..<startIndex }
        let bytes = utf8
        var start = bytes.startIndex
        while let candidate = bytes[start...].firstIndex(of: first) {
            var position = candidate
            var matched = 0
            while matched < pattern.count, position != bytes.endIndex, bytes[position] == pattern[matched] {
                bytes.formIndex(after: &position)
                matched += 1
            }
            if matched == pattern.count { return candidate..<position }
            start = bytes.index(after: candidate)
        }
        return nil
    }
}

extension String {
    /// Whether `needle` occurs in this string, byte for byte (see `Substring.firstRange(ofText:)`).
    func containsText(_ needle: String) -> Bool {
        self[...].firstRange(ofText: needle) != nil
    }
}
