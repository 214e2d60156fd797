import Clocks
import Configuration
import Foundation
import MIDI
@testable import Playback
@testable import PlaybackService
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// The player's memory is bounded in bytes, not only in requests: the songs being read from
/// clients share a budget (in all and per client), a file is judged by its size before it is
/// read, and the queue is bounded in songs and in what its parsed songs take. Past a bound a
/// request is refused at once as busy, naming the bound; what was held is given back.
/// (The budgets here are test-sized; the daemon's defaults are 64 MiB, 32 MiB per client,
/// 64 songs and 128 MiB.)
@Suite("Memory bounds: songs being read, the queue")
struct MemoryBoundsTests {
    static let kib = 1024

    /// A pipe holding `bytes` (under a pipe's 64 KiB, so the write does not block) whose writer
    /// stays open: a client that sends part of a song and then nothing.
    static func stalledPipe(sending bytes: Int) throws -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        let pipe = try ClientPipeTests.pipe()
        _ = try [UInt8](repeating: 0x4D, count: bytes).withUnsafeBytes { try pipe.writeEnd.write($0) }
        return pipe
    }

    @Test("a song file over the limit for one song is refused before it is read, naming its size and the limit in MiB")
    func oversizedFileRefusedBySize() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        // A sparse 100 MiB file: refused by its size, so not a byte of it is read.
        let path = harness.directory.appendingPathComponent("song.mid").path
        let file = try FileDescriptor.open(FilePath(path), .readWrite, options: [.create], permissions: .ownerReadWrite)
        #expect(ftruncate(file.rawValue, 100 << 20) == 0)
        try file.close()
        let descriptor = try FileDescriptor.open(FilePath(path), .readOnly)

        let error = await #expect(throws: PlaybackServiceError.self) {
            try await harness.player.play(PlayRequest(file: descriptor, displayName: "song.mid", queue: false, client: ":1.7"))
        }
        #expect(error == .songTooLarge(file: "song.mid", bytes: 100 << 20, limit: 16 << 20))
        #expect(error?.description == "song.mid is 100.0 MiB, over the 16 MiB limit for one song")
        #expect(harness.player.readBudget.held == 0)
        #expect(await harness.activity() == .idle)
    }

    @Test("songs being read past the budget for everyone are refused as busy at once, and the budget comes back when they end")
    func totalReadBudget() async throws {
        let settings = PlaybackServiceSettings(readTimeout: .seconds(10),
                                               readBudget: .init(total: 256 * Self.kib, perClient: 256 * Self.kib))
        // The read time-out runs on this test clock (PlayerHarness's player reads on the real one).
        let clock = TestClock()
        let player = try await ClientPipeTests.player(clock: clock, settings: settings)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let budget = player.readBudget
        // Two clients each send part of a song and then nothing: the budget is taken.
        var stalled: [Task<PlaybackSnapshot, any Error>] = []
        var writers: [FileDescriptor] = []
        for client in [":1.10", ":1.11"] {
            let pipe = try Self.stalledPipe(sending: 60 * Self.kib)
            writers.append(pipe.writeEnd)
            let request = PlayRequest(file: pipe.readEnd, displayName: "stalled.mid", queue: false, client: client)
            stalled.append(Task { try await player.play(request) })
        }
        defer { writers.forEach { try? $0.close() } }
        try await eventually("both stalled songs hold their share") { budget.held == 256 * Self.kib }

        // A third client's song is busy at once (no time passes), naming the budget; a file is
        // judged by its size before it is read.
        let pipe = try Self.stalledPipe(sending: 10)
        defer { try? pipe.writeEnd.close() }
        let refusedPipe = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(PlayRequest(file: pipe.readEnd, displayName: "third.mid", queue: false, client: ":1.12"))
        }
        let (file, opened) = try ClientSongs.request(ClientSongs.threeNotes, named: "file.mid", in: directory)
        let refusedFile = await #expect(throws: PlaybackServiceError.self) {
            try await player.play(PlayRequest(file: file.file, displayName: "file.mid", queue: false, client: ":1.12"))
        }
        for refused in [refusedPipe, refusedFile] {
            guard case let .busy(_, reason)? = refused else {
                Issue.record("expected busy, got \(String(describing: refused))")
                continue
            }
            #expect(reason.contains("read_budget_mib"), "\(reason)")
            #expect(refused?.kind == "Busy")
            #expect(refused?.description.contains("\n") == false)
        }
        #expect(ClientPipeTests.readEndIsClosed(writeEnd: pipe.writeEnd), "the refused pipe was kept open")
        #expect(!opened.isStillOpen, "the refused file was kept open")
        #expect(budget.held == 256 * Self.kib, "a refused request reserved nothing")

        // The stalled songs time out; what they held is given back, and a song plays again.
        // (Their deadlines may start a moment after their reads: the clock moves until they fire.)
        try await eventually("the stalled reads time out and give their share back") {
            await clock.advance(by: .seconds(10))
            return budget.held == 0
        }
        for task in stalled { await #expect(throws: PlaybackServiceError.self) { try await task.value } }
        #expect(budget.held == 0)
        let (after, _) = try ClientSongs.request(ClientSongs.threeNotes, named: "after.mid", in: directory)
        let status = try await player.play(after)
        #expect(status.activity == .playing)
        #expect(budget.held == 0, "a song read and parsed holds nothing of the budget")
        await player.stop()
    }

    @Test("one client cannot take the whole budget: past its own share it is busy, and another client's song still plays")
    func perClientReadBudget() async throws {
        let settings = PlaybackServiceSettings(readBudget: .init(total: 1024 * Self.kib, perClient: 128 * Self.kib))
        let harness = try await PlayerHarness(initial: .playbackReady, settings: settings)
        defer { harness.cleanUp() }
        let first = try Self.stalledPipe(sending: 60 * Self.kib)
        defer { try? first.writeEnd.close() }
        let stalled = Task {
            try await harness.player.play(PlayRequest(file: first.readEnd, displayName: "one.mid", queue: false, client: ":1.20"))
        }
        try await eventually("the stalled song holds its share") { harness.player.readBudget.held(by: ":1.20") == 128 * Self.kib }

        let second = try Self.stalledPipe(sending: 60 * Self.kib)
        defer { try? second.writeEnd.close() }
        let refused = await #expect(throws: PlaybackServiceError.self) {
            try await harness.player.play(PlayRequest(file: second.readEnd, displayName: "two.mid", queue: false, client: ":1.20"))
        }
        guard case let .busy(file, reason)? = refused else {
            Issue.record("expected busy, got \(String(describing: refused))")
            return
        }
        #expect(file == "two.mid")
        #expect(reason.contains("read_budget_per_client_mib"), "\(reason)")

        let (other, _) = try harness.request(ClientSongs.threeNotes, named: "other.mid")
        let status = try await harness.player.play(PlayRequest(file: other.file, displayName: "other.mid", queue: false, client: ":1.21"))
        #expect(status.activity == .playing && status.file == "other.mid")
        stalled.cancel()
        await harness.player.stop()
    }

    @Test("the queue holds at most its number of songs: one more is busy, naming the limit, and the queue is unchanged")
    func queueSongLimit() async throws {
        let settings = PlaybackServiceSettings(queueLimits: PlayQueueLimits(songs: 2))
        let harness = try await PlayerHarness(initial: .playbackReady, settings: settings)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        for name in ["b.mid", "c.mid"] {
            let (request, _) = try harness.request(ClientSongs.threeNotes, named: name, queue: true)
            _ = try await harness.player.play(request)
        }
        let (request, opened) = try harness.request(ClientSongs.threeNotes, named: "d.mid", queue: true)
        let error = await #expect(throws: PlaybackServiceError.self) { try await harness.player.play(request) }
        #expect(error == .busy(file: "d.mid", reason: "the queue already holds 2 songs, its limit (max_queued_songs = 2); "
            + "try again once some have played, or 'composer-cli stop' to empty it"))
        #expect(!opened.isStillOpen, "the refused song's file was kept open")
        let status = await harness.player.snapshot()
        #expect(status.file == "long.mid" && status.queued.map(\.file) == ["b.mid", "c.mid"])

        // A song that replaces (no --queue) is not held to the queue's limit.
        let (replacing, _) = try harness.request(ClientSongs.threeNotes, named: "now.mid")
        #expect(try await harness.player.play(replacing).file == "now.mid")
        await harness.player.stop()
    }

    @Test("a song queued with controls (--tempo, a loop played 3 times, a count-in, --transpose) takes at most twice its file, the written song counted once")
    func arrangedSongWithinTwiceItsFile() async throws {
        let song = ClientSongs.denseNotes(20_000)
        // Room for one such song at twice its file, not for two.
        let settings = PlaybackServiceSettings(queueLimits: PlayQueueLimits(songs: 64, bytes: 2 * song.count + 1))
        let harness = try await PlayerHarness(initial: .playbackReady, settings: settings)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        let controls = ArrangementText(loop: "5s-12s", loopCount: 3, tempo: "90%", transpose: 2, countIn: 2)

        var (arranged, _) = try harness.request(song, named: "arranged.mid", queue: true)
        arranged.arrangement = controls
        #expect(try await harness.player.play(arranged).queued.map(\.file) == ["arranged.mid"])

        var (second, _) = try harness.request(song, named: "again.mid", queue: true)
        second.arrangement = controls
        let error = await #expect(throws: PlaybackServiceError.self) { try await harness.player.play(second) }
        guard case .busy(let file, _)? = error else {
            Issue.record("expected busy, got \(String(describing: error))")
            return
        }
        #expect(file == "again.mid")
        await harness.player.stop()
    }

    @Test("the queue holds at most its memory: a song whose parsed form would pass it is busy, naming the limit in MiB")
    func queueMemoryLimit() async throws {
        let song = ClientSongs.sustainedA4(seconds: 2)
        let footprint = try MIDIFileReader.read(song).memoryFootprint
        let settings = PlaybackServiceSettings(queueLimits: PlayQueueLimits(songs: 64, bytes: footprint * 3 / 2))
        let harness = try await PlayerHarness(initial: .playbackReady, settings: settings)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        let (first, _) = try harness.request(song, named: "b.mid", queue: true)
        _ = try await harness.player.play(first)

        let (second, _) = try harness.request(song, named: "c.mid", queue: true)
        let error = await #expect(throws: PlaybackServiceError.self) { try await harness.player.play(second) }
        guard case let .busy(file, reason)? = error else {
            Issue.record("expected busy, got \(String(describing: error))")
            return
        }
        #expect(file == "c.mid")
        #expect(reason.contains("max_queue_mib") && reason.contains("MiB"), "\(reason)")
        #expect(await harness.player.snapshot().queued.map(\.file) == ["b.mid"])

        // Once the queue is emptied there is room again.
        await harness.player.stop()
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 10), named: "long.mid")
        let (again, _) = try harness.request(song, named: "c.mid", queue: true)
        #expect(try await harness.player.play(again).queued.map(\.file) == ["c.mid"])
        await harness.player.stop()
    }
}
