import Clocks
import Foundation
import Glibc
import Playback
import PlaybackService
@testable import SpeakerdAPI
import SystemPackage
import Testing

/// Descriptors that can never deliver a song fail the moment they arrive, naming what they are;
/// before, each one waited the full read time-out and then blamed "a pipe whose writer never closed".
@Suite("Client descriptors that can never hold a song")
struct ClientFileKindTests {
    enum Source: String, CaseIterable, Sendable {
        case directory, devNull, devZero, devURandom, eventfd

        func open() throws -> FileDescriptor {
            switch self {
            case .directory: try FileDescriptor.open("/tmp", .readOnly, options: [.directory, .closeOnExec])
            case .devNull: try FileDescriptor.open("/dev/null", .readOnly, options: [.closeOnExec])
            case .devZero: try FileDescriptor.open("/dev/zero", .readOnly, options: [.closeOnExec])
            case .devURandom: try FileDescriptor.open("/dev/urandom", .readOnly, options: [.closeOnExec])
            case .eventfd: FileDescriptor(rawValue: Self.makeEventfd(0, O_CLOEXEC))
            }
        }

        /// glibc's `eventfd(2)`, looked up at run time: Swift's Glibc module has no `sys/eventfd.h`
        /// (`EFD_CLOEXEC` is `O_CLOEXEC`), and the C shims that do are the D-Bus module's own.
        static let makeEventfd = unsafeBitCast(
            dlsym(UnsafeMutableRawPointer(bitPattern: 0), "eventfd"), to: (@convention(c) (UInt32, Int32) -> Int32).self)

        var kind: String {
            switch self {
            case .directory: "a directory"
            case .devNull, .devZero, .devURandom: "a character device"
            case .eventfd: "an eventfd"
            }
        }
    }

    @Test("a directory, /dev/null, /dev/zero, /dev/urandom or an eventfd fails at once, naming its kind, and is closed",
          arguments: Source.allCases)
    func refusedAtOnce(_ source: Source) async throws {
        let clock = TestClock()
        let player = try await ClientPipeTests.player(clock: clock, settings: PlaybackServiceSettings(readTimeout: .seconds(10)))
        let descriptor = try source.open()
        // Marked so its number, if something else in this process reuses it once it is closed, is
        // told from the descriptor itself still open: not close-on-exec (every open here is), and
        // O_APPEND on its open file description (a spawned process's /dev/null, opened without
        // close-on-exec by another test, has no reason to carry it).
        #expect(fcntl(descriptor.rawValue, F_SETFD, 0) == 0)
        #expect(fcntl(descriptor.rawValue, F_SETFL, fcntl(descriptor.rawValue, F_GETFL) | O_APPEND) == 0)
        // The test clock never moves: only an answer that does not wait for the read time-out can come.
        let error = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(PlayRequest(file: descriptor, displayName: "song.mid", queue: false))
        }
        #expect(error?.description == "cannot play song.mid: it is \(source.kind), not a MIDI file")
        let flags = fcntl(descriptor.rawValue, F_GETFD), status = fcntl(descriptor.rawValue, F_GETFL)
        #expect(flags == -1 || flags & FD_CLOEXEC != 0 || status & O_APPEND == 0, "the descriptor was left open")
        #expect(await player.snapshot().activity == .idle)
    }

    @Test("the kinds are told apart: regular file, pipe, named pipe, socket")
    func kinds() throws {
        let directory = NSTemporaryDirectory() + "/kinds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: directory + "/song.mid", contents: Data([1, 2, 3])))
        let file = try FileDescriptor.open(directory + "/song.mid", .readOnly)
        defer { try? file.close() }
        #expect(SongFileKind(descriptor: file.rawValue) == .regularFile)

        let pipe = try FileDescriptor.pipe()
        defer { try? pipe.readEnd.close(); try? pipe.writeEnd.close() }
        #expect(SongFileKind(descriptor: pipe.readEnd.rawValue) == .pipe)

        #expect(mkfifo(directory + "/fifo", 0o600) == 0)
        let fifo = try FileDescriptor.open(directory + "/fifo", .readOnly, options: [.nonBlocking])
        defer { try? fifo.close() }
        #expect(SongFileKind(descriptor: fifo.rawValue) == .namedPipe)

        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        #expect(SongFileKind(descriptor: pair[0]) == .socket)
        #expect(SongFileKind(descriptor: -1) == nil)
    }
}
