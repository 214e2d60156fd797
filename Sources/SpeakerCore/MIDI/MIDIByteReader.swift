/// A bounds-checked cursor over part of a file's bytes.
///
/// Offsets are absolute positions in the whole file, so every error can name the byte where it
/// happened even when the MIDI data sits inside an RMID wrapper. Reading past `end` never traps:
/// it returns `nil` and the caller turns that into the error that fits what it was reading.
struct MIDIByteReader {
    let bytes: [UInt8]
    /// Current position (absolute).
    private(set) var offset: Int
    /// One past the last byte this reader may read (absolute).
    let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { end - offset }
    var isAtEnd: Bool { offset >= end }

    /// The next byte without consuming it.
    func peek() -> UInt8? {
        offset < end ? bytes[offset] : nil
    }

    mutating func readByte() -> UInt8? {
        guard offset < end else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        offset += count
        return true
    }

    /// Big-endian 32-bit integer (SMF chunk lengths).
    mutating func readUInt32BE() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Little-endian 32-bit integer (RIFF chunk lengths).
    mutating func readUInt32LE() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset])
    }

    mutating func readUInt16BE() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// Four bytes as an ASCII tag (chunk type), `nil` at the end.
    mutating func readTag() -> String? {
        guard let raw = readBytes(4) else { return nil }
        return MIDIByteText.printable(raw)
    }

    /// Outcome of reading a variable-length quantity.
    enum VLQ: Equatable {
        case value(Int)
        /// The bytes ran out before a byte with the high bit clear.
        case truncated
        /// Four bytes all had the continuation bit set: the SMF maximum is 0x0FFFFFFF.
        case tooLong
    }

    /// A MIDI variable-length quantity: 7 bits per byte, at most 4 bytes (0x0FFFFFFF).
    mutating func readVLQ() -> VLQ {
        var value = 0
        for _ in 0..<4 {
            guard let byte = readByte() else { return .truncated }
            value = value << 7 | Int(byte & 0x7F)
            if byte & 0x80 == 0 { return .value(value) }
        }
        return .tooLong
    }
}
