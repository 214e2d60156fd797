import Foundation
@testable import ComposerCLIKit
@testable import PlaybackService
@testable import Daemon
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// Playback through the real API, served by the coordinator-backed playback the live daemon uses.
extension DaemonIntegrationTests {
    @Test("a malformed MIDI file sent while the speaker is not ready is refused at once, not after the play timeout")
    func malformedSongWhileNotReady() async throws {
        let fake = try await DaemonWorld.start(bluez: false)
        let state = fake.state
        state.write("MThd this is not a MIDI file", to: "broken.mid")
        // A play timeout far longer than the test's bound: an answer before it proves the song
        // was checked before waiting for the speaker.
        let daemon = fake.makeDaemon(playback: true) { $0.playTimeout = .seconds(3600) }
        await daemon.start()
        #expect(try await daemon.status().readiness == "bus")

        let client = try await fake.client()
        let file = try FileDescriptor.open(state.path + "/broken.mid", .readOnly)
        defer { try? file.close() }
        let error = await #expect(throws: SpeakerdError.self) {
            _ = try await client.play(PlayRequest(file: file, displayName: "broken.mid", queue: false))
        }
        guard case let .rejected(name, message)? = error else {
            Issue.record("expected the daemon to reject the song, got \(String(describing: error))")
            return
        }
        #expect(name == SpeakerdBus.ErrorName.invalidFile)
        #expect(message.hasPrefix("cannot play broken.mid: "))
        #expect(try await client.status().playback.state == "idle")
        await daemon.shutdown()
        _ = fake
    }

    /// A format-0 Standard MIDI File: one piano note for 0.3 s (480 ticks a beat at 120 bpm).
    static let shortSong: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0]
        + Array("MTrk".utf8) + [0, 0, 0, 16]
        + [0x00, 0xC0, 0x00, 0x00, 0x90, 0x3C, 0x64, 0x82, 0x20, 0x80, 0x3C, 0x00, 0x00, 0xFF, 0x2F, 0x00]

    @Test("a song played through the API ends by itself: play --wait's waiter sees it finish and status says Ready again")
    func songEndsAndStatusFollows() async throws {
        let fake = try await knownSpeakerWorld()
        let songPath = fake.state.path + "/short.mid"
        try Data(Self.shortSong).write(to: URL(fileURLWithPath: songPath))
        let daemon = fake.makeDaemon(playback: true) { $0.playTimeout = .seconds(10) }
        await daemon.start()
        try await daemon.gate.wait(for: .playbackReady, timeout: .seconds(10))

        let client = try await fake.client()
        let wakeUps = try await client.playbackChanges()
        let file = try FileDescriptor.open(songPath, .readOnly)
        defer { try? file.close() }
        let started = try await client.play(PlayRequest(file: file, displayName: "short.mid", queue: false))
        #expect(started.message == "Playing short.mid on JBL Flip 5")
        #expect(started.playback.file == "short.mid")

        var states: [String] = []
        let outcome = try await PlaybackWaiter(control: client).wait(for: "short.mid", wakeUps: wakeUps) {
            states.append($0.playback.state)
        }
        #expect(outcome.playedToEnd)
        #expect(states.first == "playing")
        // The status line follows the song's end through the daemon's playback watcher, a hop
        // behind the playback state the waiter read: it must get there, promptly.
        try await eventually("status says Ready again") { try await client.status().message == "Ready: JBL Flip 5" }
        #expect(try await client.status().playback.state == "idle")
        await daemon.shutdown()
        _ = fake
    }
}

@Suite("speakerd's D-Bus error names for playback failures")
struct PlaybackErrorNameTests {
    @Test("a broken song is InvalidFile, a speaker that never got ready is NotReady, the rest Failed")
    func names() {
        let broken = PlaybackServiceError.invalidSong(file: "a.mid", reason: "no MThd")
        #expect(SpeakerdDaemon.rejected(broken) == .rejected(name: SpeakerdBus.ErrorName.invalidFile, message: broken.description))
        let late = PlaybackServiceError.notReady(file: "a.mid", after: .seconds(30), waitingFor: "connecting")
        #expect(SpeakerdDaemon.rejected(late) == .rejected(name: SpeakerdBus.ErrorName.notReady,
                                                          message: "the speaker did not become ready within 30 s: still connecting"))
        let replaced = PlaybackServiceError.replaced(file: "a.mid", by: "b.mid")
        #expect(SpeakerdDaemon.rejected(replaced) == .rejected(name: SpeakerdBus.ErrorName.failed, message: replaced.description))
        #expect(SpeakerdDaemon.rejected(PlaybackServiceError.shuttingDown)
                == .rejected(name: SpeakerdBus.ErrorName.failed, message: PlaybackServiceError.shuttingDown.description))
    }
}
