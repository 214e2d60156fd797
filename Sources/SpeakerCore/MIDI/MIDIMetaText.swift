/// Text in meta events: the spec says ASCII, files carry UTF-8 or Latin-1.
enum MIDIMetaText {
    /// UTF-8 when the bytes are valid UTF-8, else Latin-1 (every byte is a character), so a name
    /// is never lost to a decoding error. Trailing NULs, written by some C tools, are dropped.
    static func decode(_ bytes: [UInt8]) -> String {
        var trimmed = bytes[...]
        while trimmed.last == 0 { trimmed = trimmed.dropLast() }
        if let text = String(validating: trimmed, as: UTF8.self) { return text }
        return String(String.UnicodeScalarView(trimmed.map { Unicode.Scalar($0) }))
    }
}
