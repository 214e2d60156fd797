import AsyncSignals
@testable import DBus
import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
import SystemPackage
import TestSupport
import Testing

/// A stand-in daemon whose `play` waits for the speaker until the test says how it ends.
actor SpeakerWaitingControl: StandInControl {
    enum Ending: Sendable { case starts, fails(String) }

    private(set) var started = 0
    private(set) var cancelled = 0
    private var ending: Ending?
    let waiting = StatusReport(readiness: "speakerConnected", message: "Waiting for JBL Flip 5's audio device",
                               speaker: nil, playback: .init(state: "waiting", file: "song.mid", positionSeconds: nil, durationSeconds: nil),
                               waitingFor: .init(code: "audioPath", message: "no audio device for JBL Flip 5 yet"))
    let playing = StatusReport(readiness: "playbackReady", message: "Playing song.mid on JBL Flip 5", speaker: nil,
                               playback: .init(state: "playing", file: "song.mid", positionSeconds: 0, durationSeconds: 2))

    /// The speaker answers (or the request fails) now.
    func end(_ ending: Ending) { self.ending = ending }

    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        started += 1
        defer { try? request.file.close() }
        while ending == nil {
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                cancelled += 1
                throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "cancelled")
            }
        }
        switch ending! {
        case .starts: return playing
        case .fails(let reason): throw .rejected(name: SpeakerdBus.ErrorName.notReady, message: reason)
        }
    }

    func status() async throws(SpeakerdError) -> StatusReport { ending == nil ? waiting : playing }
    nonisolated var standingReport: StatusReport { waiting }
}

/// Most D-Bus client libraries give up on a reply after 25 s, and a song may wait longer than
/// that for its speaker. `Play` therefore answers within its window: with the outcome if it
/// came, else "still waiting" and a request id whose outcome follows as `PlayRequestEnded`.
@Suite("Play answers within its window; a longer wait ends with PlayRequestEnded", .serialized)
struct PlayAnswerWindowTests {
    static let window = Duration.milliseconds(400)

    func serve() async throws -> (FakeBusWorld, SpeakerWaitingControl, DBusConnection) {
        let world = try await FakeBusWorld.start(bluez: false)
        let control = SpeakerWaitingControl()
        let server = try await world.connect()
        let object = try SpeakerdDBusObject.make(serving: control, initial: control.waiting,
                                                 limits: SpeakerdRequestLimits(playAnswerWithin: Self.window))
        try server.export(object, at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)
        return (world, control, server)
    }

    func song() throws -> FileDescriptor {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("answer-window-\(UInt32.random(in: 0...UInt32.max)).mid").path
        try Data(DaemonIntegrationTests.shortSong).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        return try FileDescriptor.open(path, .readOnly)
    }

    @Test("a client with a reply timeout shorter than the wait gets 'still waiting' and a request id in time, then the outcome as a signal")
    func rawClientIsAnsweredInTime() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let client = try await world.connect()
        let endings = try await client.signals(matching: DBusMatchRule(
            path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "PlayRequestEnded"))
        var ended = endings.makeAsyncIterator()
        let file = try song()
        defer { try? file.close() }

        // A reply timeout of 2 s, like a client library's 25 s against a longer wait.
        let reply = try await client.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                          method: "Play", arguments: [.unixFD(try DBusUnixFD(duplicating: file.rawValue)),
                                                                      .string("song.mid"), .bool(false)],
                                          timeout: .seconds(2))
        let accepted = try SpeakerdDBusRecords.status(from: reply[0])
        let request = try #require(try SpeakerdDBusRecords.pendingRequest(from: reply[0]))
        #expect(accepted.playback.state == "waiting")
        #expect(accepted.waitingFor?.code == "audioPath", "the answer says what the song waits for")

        await control.end(.starts)
        let signal = try #require(await ended.next())
        #expect(try signal.arguments.decode(UInt64.self, at: 0) == request)
        #expect(try signal.arguments.decode(String.self, at: 1) == "", "no error: the song started")
        #expect(try SpeakerdDBusRecords.status(from: signal.arguments[3]).playback.state == "playing")
        #expect(await control.started == 1)
    }

    @Test("composer-cli's client follows the request to its end: the song that starts late is reported playing")
    func clientFollowsToStart() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let client = SpeakerdDBusClient(connection: try await world.connect())
        let file = try song()
        defer { try? file.close() }
        let play = Task { try await client.play(PlayRequest(file: file, displayName: "song.mid", queue: false)) }
        try await Task.sleep(for: Self.window * 3)  // well past the window: answered "still waiting" by now
        await control.end(.starts)
        let report = try await play.value
        #expect(report.playback.state == "playing")
        #expect(report.message == "Playing song.mid on JBL Flip 5")
    }

    @Test("a request that fails after the window fails in the client with the daemon's error name and reason")
    func clientGetsLateFailure() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let client = SpeakerdDBusClient(connection: try await world.connect())
        let file = try song()
        defer { try? file.close() }
        let play = Task { () async throws(SpeakerdError) -> StatusReport in
            try await client.play(PlayRequest(file: file, displayName: "song.mid", queue: false))
        }
        try await Task.sleep(for: Self.window * 3)
        await control.end(.fails("the speaker did not become ready within 30 s: no audio device for JBL Flip 5 yet"))
        let error = await #expect(throws: SpeakerdError.self) { try await play.value }
        #expect(error == .rejected(name: SpeakerdBus.ErrorName.notReady,
                                   message: "the speaker did not become ready within 30 s: no audio device for JBL Flip 5 yet"))
    }

    @Test("an outcome within the window is the reply itself, with no request id")
    func quickOutcomeIsTheReply() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        await control.end(.starts)
        let client = try await world.connect()
        let file = try song()
        defer { try? file.close() }
        let reply = try await client.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                          method: "Play", arguments: [.unixFD(try DBusUnixFD(duplicating: file.rawValue)),
                                                                      .string("song.mid"), .bool(false)])
        #expect(try SpeakerdDBusRecords.status(from: reply[0]).playback.state == "playing")
        #expect(try SpeakerdDBusRecords.pendingRequest(from: reply[0]) == nil)
    }

    @Test("a request answered 'still waiting' is still its client's: it is cancelled when the client leaves, and its slot freed")
    func answeredRequestIsCancelledWithItsClient() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let client = try await world.connect()
        let file = try song()
        defer { try? file.close() }
        _ = try await client.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                  method: "Play", arguments: [.unixFD(try DBusUnixFD(duplicating: file.rawValue)),
                                                              .string("song.mid"), .bool(false)],
                                  timeout: .seconds(2))
        #expect(server.exports.pending.count(boundedOnly: true) == 1, "the answered request still holds its slot")
        client.close()  // Ctrl-C on `composer-cli play`
        try await eventually("the waiting request is cancelled") { await control.cancelled == 1 }
        try await eventually("its slot is freed") { server.exports.pending.count(boundedOnly: true) == 0 }
    }

    @Test("the exported object is freed once nobody holds it: Play's signal reaches it without keeping it alive")
    func exportedObjectIsFreed() throws {
        let control = SpeakerWaitingControl()
        var object: DBusObject? = try SpeakerdDBusObject.make(serving: control, initial: control.waiting)
        weak var freed = object
        #expect(freed != nil)
        object = nil
        #expect(freed == nil, "the object's own method closures keep it alive (a retain cycle)")
    }
}
