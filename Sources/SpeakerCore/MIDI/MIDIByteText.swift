/// How bytes are spelled in error and warning messages.
enum MIDIByteText {
    /// `0x0F`-style spelling of a byte, as MIDI documentation writes them.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }

    /// Bytes shown as text (a chunk tag, a file's first bytes), non-printable ones as '.'.
    static func printable(_ raw: some Sequence<UInt8>) -> String {
        String(decoding: raw.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
    }
}
