import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
@testable import Playback
import PropertyBased
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

    // MARK: - The window's decision, on looks handed to it

    /// Looks every `interval` from 0 ms (each `late[i]` ms late, on top of the ones before), at a
    /// device that pulls every 10 ms before `lastPull` ms, once at `lastPull`, and never again:
    /// when, in ms, the window first says stalled (nil: not by `until` ms), and the longest gap
    /// between two looks.
    static func firstStall(lastPull: Int, late: [Int] = [], until: Int = 20_000) -> (seen: Int?, longestGap: Int) {
        let start = ContinuousClock.now
        let limit = 3_000, interval = limit / 3
        func pulls(at ms: Int) -> Int { min(ms, lastPull) / 10 + (ms >= lastPull ? 1 : 0) }
        var window = StallWindow(limit: .milliseconds(limit), start: start, pulls: pulls(at: 0))
        #expect(window.interval == .milliseconds(interval))
        var now = 0, longestGap = 0, index = 0
        while now <= until {
            let gap = interval + (index < late.count ? late[index] : 0)
            index += 1
            now += gap
            longestGap = max(longestGap, gap)
            if window.look(at: start.advanced(by: .milliseconds(now)), pulls: pulls(at: now)) { return (now, longestGap) }
        }
        return (nil, longestGap)
    }

    @Test("a stall is seen once the device has been quiet for the limit, and within a third of a limit after, wherever its last pull fell between two looks")
    func seenWithinAThirdOfALimit() {
        for lastPull in stride(from: 2_000, through: 3_000, by: 50) {
            let seen = Self.firstStall(lastPull: lastPull).seen
            let after = seen.map { $0 - lastPull }
            #expect(after.map { (3_000...4_000).contains($0) } == true, "last pull at \(lastPull) ms: seen \(String(describing: after)) ms after it")
        }
        // Just after a look: looking once a limit saw this one 5.9 s after the last pull.
        #expect(Self.firstStall(lastPull: 3_100).seen == 7_000)
    }

    @Test("a look that wakes late judges the time that really passed: a device quiet since it opened is a stall at the first look, 5 s on")
    func lateLookJudgesRealTime() {
        #expect(Self.firstStall(lastPull: 0, late: [4_000]).seen == 5_000)
    }

    /// The first look at or after the last pull sees the count it keeps; the first look a limit
    /// after that one is the stall. So, looks at most `gap` apart: between the limit and the limit
    /// and two gaps after the last pull (the limit and one gap when the looks keep time).
    @Test("whatever the looks' lateness and the last pull: never a stall before the device has been quiet for the limit, always one by the limit and two of the longest gaps between looks")
    func windowModel() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...1_500).array(of: 0...30), Gen.int(in: 0...12_000)) { late, lastPull in
            let (seen, longestGap) = Self.firstStall(lastPull: lastPull, late: late, until: 60_000)
            let stalled = try #require(seen, "no stall seen by 60 s after a last pull at \(lastPull) ms")
            #expect(stalled - lastPull >= 3_000, "seen \(stalled - lastPull) ms after the last pull")
            #expect(stalled - lastPull <= 3_000 + 2 * longestGap, "seen \(stalled - lastPull) ms after the last pull; looks at most \(longestGap) ms apart")
        }
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
