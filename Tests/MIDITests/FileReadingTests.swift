import MIDI
import Foundation
import SystemPackage
import Testing

@Suite("Reading songs from files and descriptors")
struct FileReadingTests {
    /// A fresh directory per test, so tests can run in parallel.
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("midi-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a song on disk reads like the same bytes in memory")
    func readsFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40] + SMF.endOfTrack])
        let path = directory.appendingPathComponent("song.mid").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try MIDIFileReader.read(contentsOfFile: path) == MIDIFileReader.read(bytes))
    }

    @Test("a missing file is a one-line error naming the path")
    func missingFile() {
        #expect(throws: MIDIFileError(.unreadable(path: "/nonexistent/song.mid", reason: "No such file or directory"))) {
            try MIDIFileReader.read(contentsOfFile: "/nonexistent/song.mid")
        }
    }

    @Test("an endless descriptor stops at the size limit instead of filling memory")
    func endlessDescriptor() throws {
        let zero = try FileDescriptor.open("/dev/zero", .readOnly)
        defer { try? zero.close() }
        let error = #expect(throws: MIDIFileError.self) {
            try MIDIFileReader.read(from: zero, name: "/dev/zero", limits: MIDIReadLimits(maxFileBytes: 100_000))
        }
        #expect(error?.kind == .limitExceeded(.fileBytes, value: 131_072, limit: 100_000))
    }
}
