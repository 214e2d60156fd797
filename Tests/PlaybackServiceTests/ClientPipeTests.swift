import Clocks
import DBus
import Foundation
import MIDI
@testable import Playback
import PlaybackService
@testable import Readiness
@testable import SpeakerdAPI
import Synchronization
import SystemPackage
import TestSupport
import Testing

/// Songs sent as pipes (`cat song.mid | composer-cli play -`): read as the bytes come, within a
/// deadline on the daemon's clock and the size limit, without a thread parked per request.
@Suite("Songs sent through a pipe")
struct ClientPipeTests {
    /// A player whose outputs go nowhere, reading client songs on `clock`.
    static func player(clock: TestClock<Duration>, settings: PlaybackServiceSettings) async throws -> Player {
        let soundFont = try await Fixtures.soundFont()
        let components = PlaybackComponents.sessions(output: { _ in NullOutput(pacing: .realTime(clock)) }, clock: clock,
                                                    soundFont: { soundFont })
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        return Player(gate: gate, settings: settings, components: components, clock: clock)
    }

    @Test("a pipe whose writer never closes fails the play after the read timeout with one clear line, and is closed")
    func stuckWriterTimesOut() async throws {
        let clock = TestClock()
        let player = try await Self.player(clock: clock, settings: PlaybackServiceSettings(readTimeout: .seconds(10)))
        let pipe = try Self.pipe()
        defer { try? pipe.writeEnd.close() }
        let half = Array(ClientSongs.threeNotes.prefix(20))
        _ = try half.withUnsafeBytes { try pipe.writeEnd.write($0) }

        let finished = Mutex(false)
        let play = Task {
            defer { finished.withLock { $0 = true } }
            return try await player.play(PlayRequest(file: pipe.readEnd, displayName: "stream.mid", queue: false))
        }
        // The read waits on the test clock: move it on, a timeout at a time, until the play answers.
        for _ in 0..<500 where !finished.withLock({ $0 }) {
            await clock.advance(by: .seconds(10))
            await Task.yield()
        }
        let error = await #expect(throws: PlaybackServiceError.self) { try await play.value }
        #expect(error == .invalidSong(file: "stream.mid", reason: "the client sent 20 bytes and then did not finish within 10 s "
            + "(a pipe whose writer never closed?); send the whole file and close it"))
        #expect(error?.description.contains("\n") == false)
        #expect(Self.readEndIsClosed(writeEnd: pipe.writeEnd), "the daemon kept the client's pipe open")
        #expect(await player.snapshot().activity == .idle)
    }

    @Test("a song that arrives through a pipe in pieces plays once the writer closes")
    func slowWriterPlays() async throws {
        let clock = TestClock()
        let player = try await Self.player(clock: clock, settings: PlaybackServiceSettings())
        let pipe = try Self.pipe()
        let song = ClientSongs.threeNotes
        _ = try Array(song.prefix(10)).withUnsafeBytes { try pipe.writeEnd.write($0) }
        let play = Task { try await player.play(PlayRequest(file: pipe.readEnd, displayName: "stream.mid", queue: false)) }
        _ = try Array(song.dropFirst(10)).withUnsafeBytes { try pipe.writeEnd.write($0) }
        try pipe.writeEnd.close()

        let status = try await play.value
        #expect(status.activity == .playing)
        #expect(status.file == "stream.mid")
        #expect(status.durationSeconds == 3)
        await player.stop()
    }

    @Test("a pipe that sends more than the size limit fails at once, without waiting for its end")
    func endlessPipeHitsTheLimit() async throws {
        let clock = TestClock()
        let settings = PlaybackServiceSettings(readLimits: MIDIReadLimits(maxFileBytes: 1000))
        let player = try await Self.player(clock: clock, settings: settings)
        let pipe = try Self.pipe()
        defer { try? pipe.writeEnd.close() }
        _ = try [UInt8](repeating: 0x4D, count: 4000).withUnsafeBytes { try pipe.writeEnd.write($0) }

        // No clock advance: the limit, not the deadline, ends this read.
        let error = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(PlayRequest(file: pipe.readEnd, displayName: "endless.mid", queue: false))
        }
        guard case let .invalidSong(file, reason)? = error else {
            Issue.record("expected invalidSong, got \(String(describing: error))")
            return
        }
        #expect(file == "endless.mid")
        #expect(reason.hasSuffix("exceeds the limit of 1000"), "\(reason)")
        #expect(Self.readEndIsClosed(writeEnd: pipe.writeEnd))
    }

    /// A pipe whose ends are closed on exec: tests in parallel start processes (dbus-daemon,
    /// pulseaudio) that would otherwise inherit the read end and keep it open.
    static func pipe() throws -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        let ends = try FileDescriptor.pipe()
        for end in [ends.readEnd, ends.writeEnd] where fcntl(end.rawValue, F_SETFD, FD_CLOEXEC) != 0 {
            throw Errno(rawValue: errno)
        }
        return ends
    }

    /// A pipe's write end reports POLLERR once no reader is left: the daemon closed its copy.
    static func readEndIsClosed(writeEnd: FileDescriptor) -> Bool {
        var entry = pollfd(fd: writeEnd.rawValue, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLERR) != 0
    }
}
