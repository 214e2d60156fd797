/// The 44-byte RIFF/WAVE header of a 16-bit PCM file.
///
/// Written twice by `WAVFileOutput`: once with zero sizes when the file opens (so a crashed
/// recording is still recognisably a WAV) and once with the real sizes when it closes.
struct WAVHeader {
    static let size = 44
    /// The most audio bytes a RIFF file can describe: its size fields are 32-bit (4 GiB), and the
    /// RIFF size counts the header's 36 bytes after itself too. Past this a file would need RF64;
    /// speakerd refuses instead (`WAVFileOutput`, `RenderRequest`).
    static let maxDataBytes = Int(UInt32.max) - (size - 8)

    /// The longest 16-bit audio at `sampleRate` with `channels` that fits in a WAV file.
    static func maxSeconds(sampleRate: Int, channels: Int = 2) -> Double {
        Double(maxDataBytes / (channels * 2)) / Double(sampleRate)
    }

    var sampleRate: Int
    var channels: Int
    var dataBytes: Int

    var bytes: [UInt8] {
        let bytesPerFrame = channels * 2
        // RIFF sizes are 32-bit; a longer recording is capped rather than wrapped around.
        let data = UInt32(clamping: dataBytes)
        var out: [UInt8] = []
        out.reserveCapacity(Self.size)
        func append(_ text: String) { out.append(contentsOf: Array(text.utf8)) }
        func append32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        func append16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        append("RIFF")
        append32(UInt32(clamping: Int(data) + Self.size - 8))
        append("WAVE")
        append("fmt ")
        append32(16)
        append16(1) // PCM
        append16(UInt16(channels))
        append32(UInt32(sampleRate))
        append32(UInt32(sampleRate * bytesPerFrame))
        append16(UInt16(bytesPerFrame))
        append16(16)
        append("data")
        append32(data)
        return out
    }
}
