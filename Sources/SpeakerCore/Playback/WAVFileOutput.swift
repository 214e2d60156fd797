import Glibc
import SystemPackage

/// Writes the song as a 16-bit PCM stereo WAV file.
///
/// The audio goes to a hidden temporary file beside the destination; when the song ends, is
/// stopped, or the task is cancelled, the header gets its real sizes and the file is renamed into
/// place. So the destination is either the previous file or a complete, valid WAV — never a
/// half-written one — and a recording stopped early is still a correct, shorter WAV. With
/// `keepWhenCancelled` false (an offline render the user interrupted), cancellation removes the
/// temporary file instead and throws `CancellationError`: nothing is left behind.
///
/// A WAV file's sizes are 32-bit: audio past 4 GiB (about 6 h 45 min of 44.1 kHz stereo) fails
/// the write, with the temporary file removed, rather than leaving a file whose header lies.
public struct WAVFileOutput: AudioOutput {
    public let path: String
    public let pacing: OutputPacing
    public let keepWhenCancelled: Bool

    public init(path: String, pacing: OutputPacing = .offline, keepWhenCancelled: Bool = true) {
        self.path = path
        self.pacing = pacing
        self.keepWhenCancelled = keepWhenCancelled
    }

    public var description: String { "file:\(path)" }

    public func play(_ source: PlaybackSource) async throws {
        // The finished file is renamed over `path`: over a device, a named pipe or a link to one
        // (`-o /dev/null`, `-o /dev/stdout`) that would replace the node itself, so only a regular
        // file, or nothing yet, may be there.
        if let kind = SongFileKind(path: path), kind != .regularFile {
            throw AudioOutputError.fileNotWritable(path: path, reason: "it is \(kind), not a file to write a WAV into")
        }
        let temporaryPath = Self.temporaryPath(for: path)
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(
                FilePath(temporaryPath), .writeOnly,
                options: [.create, .exclusiveCreate, .truncate],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
        } catch {
            throw AudioOutputError.fileNotWritable(path: path, reason: Self.reason(error))
        }
        var dataBytes = 0
        do {
            try descriptor.writeAll(WAVHeader(sampleRate: source.sampleRate, channels: 2, dataBytes: 0).bytes)
            try await PacedRenderLoop.run(source, pacing: pacing) { samples in
                guard dataBytes + samples.count * 2 <= WAVHeader.maxDataBytes else { throw WAVSizeLimit(sampleRate: source.sampleRate) }
                try Self.writeLittleEndian(samples, to: descriptor)
                dataBytes += samples.count * 2
            }
            if !keepWhenCancelled, Task.isCancelled { throw CancellationError() }
            let header = WAVHeader(sampleRate: source.sampleRate, channels: 2, dataBytes: dataBytes)
            _ = try descriptor.writeAll(toAbsoluteOffset: 0, header.bytes)
            try descriptor.close()
        } catch {
            try? descriptor.close()
            _ = unlink(temporaryPath)
            if error is CancellationError { throw error }
            throw AudioOutputError.fileNotWritable(path: path, reason: Self.reason(error))
        }
        guard rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = unlink(temporaryPath)
            throw AudioOutputError.fileNotWritable(path: path, reason: reason)
        }
    }

    private static func writeLittleEndian(_ samples: UnsafeBufferPointer<Int16>, to descriptor: FileDescriptor) throws {
        #if _endian(big)
        try descriptor.writeAll(samples.flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) })
        #else
        _ = try descriptor.writeAll(UnsafeRawBufferPointer(samples))
        #endif
    }

    /// Same directory (so the final rename is atomic), hidden, unique per process and call.
    private static func temporaryPath(for path: String) -> String {
        let file = FilePath(path)
        let directory = file.removingLastComponent()
        let name = ".\(file.lastComponent?.string ?? "out.wav").\(getpid()).\(UInt32.random(in: 0...UInt32.max)).partial"
        return directory.appending(name).string
    }

    /// The file reached the most audio a WAV can describe.
    struct WAVSizeLimit: Error, CustomStringConvertible {
        let sampleRate: Int
        var description: String {
            "a WAV file holds at most 4 GiB (\(WAVHeader.maxSeconds(sampleRate: sampleRate).spokenHoursMinutes) of audio)"
        }
    }

    private static func reason(_ error: any Error) -> String {
        if let errno = error as? Errno { return String(cString: strerror(errno.rawValue)) }
        return "\(error)"
    }
}
