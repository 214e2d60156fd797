import Clocks
import Foundation
@testable import Daemon
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// A song playing when the speaker drops: paused and resumed where it stopped (or stopped with
/// `on_speaker_lost = stop`), through the real coordinator, playback coordinator and fake BlueZ.
/// The null output is paced by the test clock, so the song's position moves only when the test
/// moves time.
extension LinkLossTests {
    /// A Standard MIDI File with one piano note held for `seconds` (120 bpm, 480 ticks a beat).
    static func heldNote(seconds: Int) -> [UInt8] {
        var ticks = seconds * 2 * 480
        var length: [UInt8] = [UInt8(ticks & 0x7F)]
        ticks >>= 7
        while ticks > 0 {
            length.insert(UInt8(ticks & 0x7F) | 0x80, at: 0)
            ticks >>= 7
        }
        let track: [UInt8] = [0x00, 0xC0, 0x00, 0x00, 0x90, 0x3C, 0x64] + length + [0x80, 0x3C, 0x00, 0x00, 0xFF, 0x2F, 0x00]
        return Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8)
            + [0, 0, 0, UInt8(track.count)] + track
    }

    /// True while `descriptor` still refers to the file at `path`. Tests run in parallel, so a
    /// closed number may already belong to another test's file: comparing inodes tells them apart.
    static func isOpen(_ descriptor: FileDescriptor, on path: String) -> Bool {
        var byDescriptor = stat()
        var byPath = stat()
        guard fstat(descriptor.rawValue, &byDescriptor) == 0, stat(path, &byPath) == 0 else { return false }
        return byDescriptor.st_ino == byPath.st_ino && byDescriptor.st_dev == byPath.st_dev
    }

    /// Starts a 30 s song and lets two seconds of it play.
    func playLongSong(_ fake: DaemonWorld, _ daemon: SpeakerdDaemon, _ clock: TestClock<Duration>) async throws {
        try await eventually("playback is ready") { daemon.gate.isReached(.playbackReady) }
        let path = fake.state.path + "/held.mid"
        try Data(Self.heldNote(seconds: 30)).write(to: URL(fileURLWithPath: path))
        // In-process, the request hands the descriptor itself to the daemon, which closes it
        // (over D-Bus the client sends a copy and keeps its own). Closing it here as well would
        // close whatever took the number meanwhile: another test's harness pipe or bus socket.
        let file = try FileDescriptor.open(path, .readOnly)
        let started = try await daemon.play(PlayRequest(file: file, displayName: "held.mid", queue: false))
        #expect(started.message == "Playing held.mid on JBL Flip 5")
        #expect(!Self.isOpen(file, on: path), "the daemon keeps the client's descriptor open after reading the song")
        _ = try await clock.advance(atMost: .seconds(5), until: "two seconds have played") {
            try await daemon.status().playback.positionSeconds ?? 0 >= 2
        }
    }

    @Test("a song playing when the link times out pauses, and resumes where it stopped once the speaker reconnects")
    func songPausesAndResumes() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon(playback: true)
        try await playLongSong(fake, daemon, clock)

        try await fake.dropLink(reason: "Timeout")
        try await eventually("the song pauses") { try await daemon.status().playback.state == "paused" }
        let pausedAt = try #require(try await daemon.status().playback.positionSeconds)
        #expect(try await fake.calls("Connect") == 1)

        _ = try await clock.advance(atMost: .seconds(3), until: "the speaker reconnects") { daemon.gate.isReached(.playbackReady) }
        try await eventually("the song resumes") { try await daemon.status().playback.state == "playing" }
        let resumedAt = try #require(try await daemon.status().playback.positionSeconds)
        #expect(abs(resumedAt - pausedAt) < 0.5, "paused at \(pausedAt) s, resumed at \(resumedAt) s")
        _ = try await clock.advance(atMost: .seconds(3), until: "the song plays on") {
            try await daemon.status().playback.positionSeconds ?? 0 >= resumedAt + 1
        }
        try await statusSays(daemon, "Playing held.mid on JBL Flip 5")
        #expect(try await daemon.status().playback.file == "held.mid")
        await daemon.shutdown()
    }

    @Test("with on_speaker_lost = stop the song stops on the loss and stays stopped after the reconnect")
    func songStopsWhenConfigured() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon(playback: true) { $0.onSpeakerLost = .stop }
        try await playLongSong(fake, daemon, clock)

        try await fake.dropLink(reason: "Timeout")
        try await eventually("the song stops") { try await daemon.status().playback.state == "stopped" }
        _ = try await clock.advance(atMost: .seconds(3), until: "the speaker reconnects") { daemon.gate.isReached(.playbackReady) }
        try await statusSays(daemon, "Ready: JBL Flip 5")
        #expect(try await daemon.status().playback.state == "stopped")
        await daemon.shutdown()
    }
}
