import SystemPackage

/// Reading songs from disk or from a descriptor, with the size limit applied while reading so a
/// huge or endless input (a FIFO, /dev/zero) never gets buffered whole.
extension MIDIFileReader {
    /// Reads the file at `path`, refusing to load more than `limits.maxFileBytes`.
    ///
    /// A file over the limit is refused before any of it is read, naming its real size (what
    /// was read when the limit stopped it would be only the limit and a block more); a stream
    /// (a FIFO), whose size is unknown, is refused once it goes past the limit.
    public static func read(contentsOfFile path: String, limits: MIDIReadLimits = .default) throws(MIDIFileError) -> MIDISong {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly)
        } catch {
            throw MIDIFileError(.unreadable(path: path, reason: "\(error)"))
        }
        defer { try? descriptor.close() }
        return try read(file: descriptor, name: path, limits: limits)
    }

    /// Reads the song behind an open file or stream, as `read(contentsOfFile:)` does: a file
    /// over the limit is refused by its size before any of it is read. The descriptor stays open.
    public static func read(file descriptor: FileDescriptor, name path: String, limits: MIDIReadLimits = .default) throws(MIDIFileError) -> MIDISong {
        // Seekable only when it is a regular file (or a device): a FIFO says ESPIPE.
        if let size = try? descriptor.seek(offset: 0, from: .end) {
            guard size <= Int64(limits.maxFileBytes) else {
                throw MIDIFileError(.fileTooLarge(bytes: Int(clamping: size), limit: limits.maxFileBytes))
            }
            do {
                _ = try descriptor.seek(offset: 0, from: .start)
            } catch {
                throw MIDIFileError(.unreadable(path: path, reason: "\(error)"))
            }
        }
        do {
            return try read(from: descriptor, name: path, limits: limits)
        } catch {
            if case .limitExceeded(.fileBytes, _, _) = error.kind, error.offset == nil {
                throw MIDIFileError(.fileTooLarge(bytes: nil, limit: limits.maxFileBytes))
            }
            throw error
        }
    }

    /// Reads a song from an open descriptor (the daemon receives client files as descriptors),
    /// stopping as soon as the data exceeds `limits.maxFileBytes`. The descriptor stays open.
    public static func read(from descriptor: FileDescriptor, name: String, limits: MIDIReadLimits = .default) throws(MIDIFileError) -> MIDISong {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
            } catch {
                throw MIDIFileError(.unreadable(path: name, reason: "\(error)"))
            }
            if count == 0 { break }
            bytes += buffer[..<count]
            guard bytes.count <= limits.maxFileBytes else {
                throw MIDIFileError(.limitExceeded(.fileBytes, value: bytes.count, limit: limits.maxFileBytes))
            }
        }
        return try read(bytes, limits: limits)
    }
}
