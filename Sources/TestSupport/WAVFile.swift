import Foundation

/// A 16-bit PCM WAV file read back for analysis: tests judge rendered audio by its samples.
///
/// Strict on purpose: a header whose sizes disagree with the file is an error here, because a
/// correct header is part of what `WAVFileOutput` promises.
public struct WAVFile: Sendable {
    public var sampleRate: Int
    public var channels: Int
    /// Interleaved samples, `frameCount * channels` of them.
    public var samples: [Int16]
    /// The RIFF size field, checked against the file length.
    public var riffSize: Int
    public var dataSize: Int

    public var frameCount: Int { samples.count / max(channels, 1) }
    public var seconds: Double { Double(frameCount) / Double(sampleRate) }

    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(path: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try self.init(bytes: bytes)
    }

    public init(bytes: [UInt8]) throws {
        func fail(_ what: String) -> FormatError { FormatError(description: "not a valid WAV: \(what)") }
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func tag(_ at: Int) -> String { String(decoding: bytes[at..<at + 4], as: UTF8.self) }
        guard bytes.count >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else { throw fail("no RIFF/WAVE header") }
        riffSize = u32(4)
        guard riffSize + 8 == bytes.count else { throw fail("RIFF size \(riffSize) + 8 != file size \(bytes.count)") }
        var offset = 12
        var format: (channels: Int, rate: Int, bits: Int)?
        var data: Range<Int>?
        while offset + 8 <= bytes.count {
            let size = u32(offset + 4)
            let body = offset + 8
            guard body + size <= bytes.count else { throw fail("chunk \(tag(offset)) overruns the file") }
            switch tag(offset) {
            case "fmt ":
                guard size >= 16, u16(body) == 1 else { throw fail("not PCM") }
                format = (u16(body + 2), u32(body + 4), u16(body + 14))
            case "data":
                data = body..<(body + size)
            default:
                break
            }
            offset = body + size + (size & 1)
        }
        guard let format, format.bits == 16, format.channels > 0 else { throw fail("no 16-bit fmt chunk") }
        guard let data else { throw fail("no data chunk") }
        sampleRate = format.rate
        channels = format.channels
        dataSize = data.count
        samples = stride(from: data.lowerBound, to: data.upperBound - 1, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
        }
    }

    /// The mono mix (average of channels) scaled to -1...1: what the analysis functions take.
    public var monoFloat: [Float] {
        var out = [Float](repeating: 0, count: frameCount)
        for frame in 0..<frameCount {
            var sum: Float = 0
            for channel in 0..<channels { sum += Float(samples[frame * channels + channel]) }
            out[frame] = sum / Float(channels) / 32768
        }
        return out
    }
}
