/// A valid Standard MIDI File of a few dozen bytes that lasts as long as asked: one note, then a
/// rest of `seconds` (at the default 120 bpm, 96 ticks a beat), then the end of the track. The
/// shape of the hostile "long rest" file: tiny to send, hours to render.
public enum LongRestSong {
    public static func bytes(seconds: Double) -> [UInt8] {
        let ticks = Int(seconds * 192)
        let track: [UInt8] = [0x00, 0x90, 0x3C, 0x64] + SMFBytes.variableLength(ticks) + [0x80, 0x3C, 0x00, 0x00, 0xFF, 0x2F, 0x00]
        return Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0, 96]
            + Array("MTrk".utf8) + SMFBytes.bigEndian32(track.count) + track
    }
}

/// The two number encodings a Standard MIDI File is built from, for tests that write songs.
public enum SMFBytes {
    /// A variable-length quantity: 7 bits a byte, most significant first, high bit on all but the last.
    public static func variableLength(_ value: Int) -> [UInt8] {
        var bytes = [UInt8(value & 0x7F)]
        var rest = value >> 7
        while rest > 0 {
            bytes.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
            rest >>= 7
        }
        return bytes
    }

    /// A chunk length: four bytes, big-endian.
    public static func bigEndian32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
