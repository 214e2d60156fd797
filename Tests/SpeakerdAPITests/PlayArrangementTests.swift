@testable import DBus
import Foundation
import Glibc
import MIDI
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// A stand-in daemon that takes every song at once and keeps the controls each came with.
actor ArrangementRecordingControl: StandInControl {
    private(set) var received: [ArrangementText] = []
    let report = StatusReport(readiness: "playbackReady", message: "Playing", speaker: nil,
                              playback: .init(state: "playing", file: "song.mid", positionSeconds: 0, durationSeconds: 1))
    nonisolated var standingReport: StatusReport { report }

    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        received.append(request.arrangement)
        try? request.file.close()
        return report
    }
}

/// `play` with the composer's controls on the bus: `PlayArranged` carries them as written, a
/// plain play stays `Play` (so it works with a speakerd from before the controls), and what a
/// client cannot mean is refused in one line.
@Suite("The composer's controls on the bus", .serialized)
struct PlayArrangementTests {
    func serve() async throws -> (FakeBusWorld, ArrangementRecordingControl, DBusConnection) {
        let world = try await FakeBusWorld.start(bluez: false)
        let control = ArrangementRecordingControl()
        let server = try await world.connect()
        try server.export(try SpeakerdDBusObject.make(serving: control, initial: control.report), at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)
        return (world, control, server)
    }

    func songDescriptor() throws -> FileDescriptor { try FileDescriptor.open("/dev/zero", .readOnly) }

    @Test("the controls a person wrote reach the daemon unchanged, and a play without them reaches it with none")
    func controlsTravelAsWritten() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
        let controls = ArrangementText(from: "5", to: "12:3", loop: "17-24", loopCount: 4, tempo: "80%", transpose: -2,
                                       mute: "10,Drums", solo: "Bass", countIn: 1)
        _ = try await client.play(PlayRequest(file: try songDescriptor(), displayName: "song.mid", queue: false, arrangement: controls))
        _ = try await client.play(PlayRequest(file: try songDescriptor(), displayName: "song.mid", queue: false))
        #expect(await control.received == [controls, ArrangementText()])
        #expect(SpeakerdDBusRecords.encode(ArrangementText()) == .properties([:]), "nothing asked, nothing sent")
    }

    @Test("a control this speakerd does not know, a value of the wrong type or an overlong text is refused as invalid arguments, naming it")
    func whatCannotBeMeantIsRefused() async throws {
        let (world, control, server) = try await serve()
        defer { server.close() }
        let raw = try await world.connect()
        func playArranged(_ bag: [String: DBusValue]) async throws {
            _ = try await raw.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                   method: "PlayArranged",
                                   arguments: [.unixFD(try DBusUnixFD(duplicating: try songDescriptor().rawValue)), .string("song.mid"),
                                               .bool(false), .properties(bag)])
        }
        let cases: [([String: DBusValue], String)] = [
            (["Swing": .string("60%")], "does not know the control 'Swing'"),
            (["Transpose": .string("up")], "Transpose"),
            (["Loop": .string(String(repeating: "1", count: 1000))], "the control Loop is 1000 bytes long"),
        ]
        for (bag, says) in cases {
            await #expect {
                try await playArranged(bag)
            } throws: { error in
                guard case DBusError.remote(let name, let message) = error else { return false }
                return name == DBusError.Name.invalidArgs && message.contains(says) && !message.contains("\n")
            }
        }
        #expect(await control.received.isEmpty, "a refused request reached the daemon")
    }
}
