import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
@testable import Playback
import Synchronization
import TestSupport
import Testing

/// The device output's watchdog on a test clock, with a device the test drives by hand: it asks
/// for audio when the test says so, as FluidSynth's driver thread does every few milliseconds
/// until a write error ends it.
@Suite("Device watchdog")
struct DeviceWatchdogTests {
    static let stallLimit = HandDrivenDevice.stallLimit

    @Test("a device that stops asking for audio mid-song fails the song once the stall limit has passed")
    func stalledDeviceFailsTheSong() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let engine = PlaybackSession(output: device.output(clock: clock), soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)
        try await engine.start(song, title: "Stalls")
        device.pull(times: 20)
        #expect(await engine.positionSeconds > 0)
        #expect(await engine.state == .playing)

        // The device goes quiet. Time passes on the test clock until the watchdog has looked twice.
        let state = await Self.advanceUntilEnded(engine, clock: clock)
        let expected = AudioOutputError.deviceStopped(output: "alsa:hand-driven", after: Self.stallLimit, reason: nil)
        #expect(state == .failed(expected.description))
        #expect(expected.description == "audio output alsa:hand-driven stopped taking audio mid-song (device gone or "
            + "sound server stopped): nothing was asked for in 3 s, so playback ended")
        #expect(device.source?.hasEnded == true, "the song still holds the synthesiser")
    }

    @Test("a device that never asks for any audio fails the play instead of hanging it")
    func silentDeviceFailsThePlay() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 0)
        let engine = PlaybackSession(output: device.output(clock: clock), soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 1)], duration: 2)
        let play = Task { try await engine.start(song, title: "Never heard") }
        let state = await Self.advanceUntilEnded(engine, clock: clock)
        await #expect(throws: AudioOutputError.deviceStopped(output: "alsa:hand-driven", after: Self.stallLimit, reason: nil)) {
            try await play.value
        }
        #expect(state == .failed(AudioOutputError.deviceStopped(output: "alsa:hand-driven", after: Self.stallLimit, reason: nil).description))
    }

    @Test("a stopped song ends its device output without a failure, however long it was watched")
    func stoppedSongIsNoFailure() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let engine = PlaybackSession(output: device.output(clock: clock), soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)
        try await engine.start(song, title: "Stopped")
        await engine.stop()
        await clock.advance(by: Self.stallLimit * 3)
        #expect(await engine.state == .stopped)
    }

    @Test("a device that dies while the song is paused (the speaker dropped) is opened again when the song resumes")
    func deviceLostWhilePausedIsReopened() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let engine = PlaybackSession(output: device.output(clock: clock), soundFont: try await Fixtures.soundFont())
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)
        try await engine.start(song, title: "Dropped")
        device.pull(times: 50)
        try await engine.pause()
        let position = await engine.positionSeconds

        // Paused, the device still asks for silence; now it dies. The watchdog notices; the song waits.
        for _ in 0..<500 where await !engine.outputLost {
            await clock.advance(by: Self.stallLimit + .milliseconds(1))
        }
        #expect(await engine.outputLost, "the watchdog never noticed the dead device")
        #expect(await engine.state == .paused)
        #expect(device.source?.hasEnded == false, "the paused song was ended with its device")

        try await engine.resume() // Returns once the reopened device asks for audio.
        #expect(device.opens == 2)
        #expect(await engine.state == .playing)
        device.pull(times: 50)
        #expect(await engine.positionSeconds > position, "the song did not go on from where it paused")
        await engine.stop()
    }

    /// Moves the clock on, a stall limit at a time, until the engine's song is over (the watchdog
    /// runs on its own task: each step gives it a turn to look). Bounded, so a watchdog that never
    /// fires fails the test instead of hanging it.
    static func advanceUntilEnded(_ engine: PlaybackSession, clock: TestClock<Duration>) async -> PlaybackState {
        for _ in 0..<500 {
            if case .failed = await engine.state { break }
            await clock.advance(by: stallLimit + .milliseconds(1))
        }
        return await engine.state
    }
}
