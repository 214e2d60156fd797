import Foundation
import Glibc
@testable import Daemon
import DBus
import PlaybackService
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing
@testable import Configuration

/// The memory bounds as a client of the real daemon meets them over D-Bus: each refusal is
/// `io.speakerd.Error.Busy` (or `InvalidFile` for a song over the size limit) with one line
/// naming the bound, and the read budget is per D-Bus connection. The player's own scenarios
/// are PlaybackServiceTests' `MemoryBoundsTests`; the figures under load, `scripts/reliability`.
@Suite("Memory bounds through the daemon's API", .serialized)
struct MemoryBoundsDaemonTests {
    static let kib = 1024

    /// A 30 s song written to the state directory, opened as a client would.
    static func longSong(_ fake: DaemonWorld, named name: String) throws -> FileDescriptor {
        let path = fake.state.path + "/" + name
        try Data(LinkLossTests.heldNote(seconds: 30)).write(to: URL(fileURLWithPath: path))
        return try FileDescriptor.open(path, .readOnly)
    }

    /// The real daemon with its player, on the real clock (songs to a null output), ready to
    /// play to the remembered speaker.
    static func readyDaemon(_ configure: (inout DaemonConfiguration) -> Void) async throws -> (DaemonWorld, SpeakerdDaemon) {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [DaemonWorld.flip])
        fake.remember([DaemonWorld.flip])
        let daemon = fake.makeDaemon(playback: true, configure)
        await daemon.start()
        try await eventually("playback is ready") { daemon.gate.isReached(.playbackReady) }
        return (fake, daemon)
    }

    static func busyMessage(_ error: SpeakerdError?) -> String? {
        guard case let .rejected(name, message)? = error, name == SpeakerdBus.ErrorName.busy else { return nil }
        return message
    }

    @Test("a queued play past max_queued_songs is Busy naming the limit; a file over 16 MiB is InvalidFile naming its size")
    func queueAndSizeThroughTheAPI() async throws {
        let (fake, daemon) = try await Self.readyDaemon { $0.queueLimits.songs = 1 }
        let client = try await fake.client()
        var opened: [FileDescriptor] = []
        defer { opened.forEach { try? $0.close() } }
        for (name, queue) in [("first.mid", false), ("second.mid", true)] {
            let file = try Self.longSong(fake, named: name)
            opened.append(file)
            _ = try await client.play(PlayRequest(file: file, displayName: name, queue: queue))
        }
        let third = try Self.longSong(fake, named: "third.mid")
        opened.append(third)
        let refused = await #expect(throws: SpeakerdError.self) {
            try await client.play(PlayRequest(file: third, displayName: "third.mid", queue: true))
        }
        let message = try #require(Self.busyMessage(refused), "\(String(describing: refused))")
        #expect(message.contains("max_queued_songs = 1") && !message.contains("\n"), "\(message)")
        #expect(try await client.status().playback.file == "first.mid")

        let path = fake.state.path + "/big.mid"
        let big = try FileDescriptor.open(FilePath(path), .readWrite, options: [.create], permissions: .ownerReadWrite)
        opened.append(big)
        #expect(ftruncate(big.rawValue, 100 << 20) == 0)
        let tooLarge = await #expect(throws: SpeakerdError.self) {
            try await client.play(PlayRequest(file: big, displayName: "big.mid", queue: false))
        }
        #expect(tooLarge == .rejected(name: SpeakerdBus.ErrorName.invalidFile,
                                      message: "big.mid is 100.0 MiB, over the 16 MiB limit for one song"))
        #expect(try await client.status().playback.file == "first.mid", "the refused song replaced nothing")
        await daemon.shutdown()
    }

    @Test("the read budget is per client connection: past its share a connection's play is Busy, another connection's plays")
    func readBudgetPerConnection() async throws {
        let (fake, daemon) = try await Self.readyDaemon {
            $0.readBudget = SongReadLimits(total: 1024 * Self.kib, perClient: 128 * Self.kib)
        }
        let greedy = try await fake.world.connect()
        var pipes: [(readEnd: FileDescriptor, writeEnd: FileDescriptor)] = []
        defer { pipes.forEach { try? $0.readEnd.close(); try? $0.writeEnd.close() } }
        for _ in 0..<2 {
            let pipe = try FileDescriptor.pipe()
            pipes.append(pipe)
            _ = try [UInt8](repeating: 0x4D, count: 60 * Self.kib).withUnsafeBytes { try pipe.writeEnd.write($0) }
        }
        // The first stalled pipe takes this connection's share; the second is refused at once.
        let playback = await daemon.playback
        let player = try #require(playback as? Player)
        let (stalledFD, secondFD) = (pipes[0].readEnd.rawValue, pipes[1].readEnd.rawValue)
        let stalled = Task { try? await rawPlay(greedy, fd: stalledFD, name: "stalled.mid") }
        try await eventually("the stalled play holds its share") { player.readBudget.held == 128 * Self.kib }
        let refused = await #expect(throws: DBusError.self) {
            try await rawPlay(greedy, fd: secondFD, name: "second.mid", timeout: .seconds(30))
        }
        guard case let .remote(name, message)? = refused else {
            Issue.record("expected a D-Bus error, got \(String(describing: refused))")
            return
        }
        #expect(name == SpeakerdBus.ErrorName.busy)
        #expect(message.contains("read_budget_per_client_mib"), "\(message)")

        let file = try Self.longSong(fake, named: "other.mid")
        defer { try? file.close() }
        let status = try await fake.client().play(PlayRequest(file: file, displayName: "other.mid", queue: false))
        #expect(status.playback.file == "other.mid")
        stalled.cancel()
        greedy.close()
        await daemon.shutdown()
    }
}
