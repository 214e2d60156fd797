import Foundation
import SpeakerdAPI
import SystemPackage

/// Songs as a client sends them: Standard MIDI File bytes in a file the test opens, handed over
/// as a descriptor, exactly like `composer-cli play` does.
public enum ClientSongs {
    /// A format-0 file at 120 bpm (480 ticks per beat, so 960 ticks a second) with one note per
    /// entry on channel 0 and `program`; it ends at `end` seconds.
    public static func smf(program: UInt8, notes: [(key: UInt8, on: Double, off: Double)], end: Double) -> [UInt8] {
        var timed: [(tick: Int, bytes: [UInt8])] = [(0, [0xC0, program])]
        for note in notes {
            timed.append((Int(note.on * 960), [0x90, note.key, 100]))
            timed.append((Int(note.off * 960), [0x80, note.key, 0]))
        }
        timed.sort { $0.tick < $1.tick }
        var track: [UInt8] = []
        var now = 0
        for event in timed {
            track += SMFBytes.variableLength(event.tick - now) + event.bytes
            now = event.tick
        }
        track += SMFBytes.variableLength(max(0, Int(end * 960) - now)) + [0xFF, 0x2F, 0x00]
        let header: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0]
        return header + Array("MTrk".utf8) + SMFBytes.bigEndian32(track.count) + track
    }

    /// Piano notes (a sharp attack, easy to place in time) at 0.5 s, 1.5 s and 2.5 s, each 0.4 s
    /// long: the onsets show whether any audio was lost or shifted across a pause.
    public static let threeNotes = smf(program: 0, notes: [(60, 0.5, 0.9), (64, 1.5, 1.9), (67, 2.5, 2.9)], end: 3)
    /// One sustained A4 (440 Hz) for `seconds`.
    public static func sustainedA4(seconds: Double) -> [UInt8] {
        smf(program: 74, notes: [(69, 0, seconds - 0.05)], end: seconds)
    }

    /// The densest a song of 4-byte events gets: a format-0 file of `count` note events, each a
    /// tick after the last (delta 1, status, key, velocity; a note released on the key it
    /// struck), with a tempo change halfway, as `bench-song-memory` writes it. What the memory bound's
    /// bound of twice the file is held to.
    public static func denseNotes(_ count: Int) -> [UInt8] {
        func tempo(_ microseconds: Int) -> [UInt8] {
            [0x00, 0xFF, 0x51, 0x03, UInt8(microseconds >> 16), UInt8(microseconds >> 8 & 0xFF), UInt8(microseconds & 0xFF)]
        }
        var body = tempo(500_000)
        body.reserveCapacity(count * 4 + 64)
        for index in 0..<count {
            let on = index % 2 == 0
            body += [0x01, on ? 0x90 : 0x80, UInt8(48 + index / 2 % 24), on ? 0x64 : 0x00]
            if index == count / 2 { body += tempo(400_000) }
        }
        body += [0x00, 0xFF, 0x2F, 0x00]
        let header: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0]
        return header + Array("MTrk".utf8) + SMFBytes.bigEndian32(body.count) + body
    }

    /// Writes `bytes` to a new file in `directory` and opens it read-only, as a client would.
    public static func request(_ bytes: [UInt8], named name: String, in directory: URL, queue: Bool = false) throws -> (PlayRequest, OpenedFile) {
        let path = directory.appendingPathComponent("\(UUID().uuidString)-\(name)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let descriptor = try FileDescriptor.open(FilePath(path), .readOnly)
        return (PlayRequest(file: descriptor, displayName: name, queue: queue), OpenedFile(descriptor: descriptor, path: path))
    }

}

/// A descriptor the test opened, to check afterwards that the daemon closed it.
public struct OpenedFile {
    public let descriptor: FileDescriptor
    public let path: String

    /// True while the descriptor number still refers to our file. (Tests run in parallel, so a
    /// closed number may already be reused by another test for another file: comparing inodes
    /// tells the two apart.)
    public var isStillOpen: Bool {
        var byDescriptor = stat()
        var byPath = stat()
        guard fstat(descriptor.rawValue, &byDescriptor) == 0, stat(path, &byPath) == 0 else { return false }
        return byDescriptor.st_ino == byPath.st_ino && byDescriptor.st_dev == byPath.st_dev
    }
}
