import Clocks
@testable import Playback
import TestSupport
import Testing

/// A pause that arrives while a resume waits for its output to take the song up again (two
/// clients at once): the resume answers, and the song is paused, as the last request asked.
@Suite("A pause overtaking a resume")
struct PauseResumeRaceTests {
    static let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 9.5)], duration: 10)

    @Test("a resume waiting for a device that has not asked for audio yet returns when a pause overtakes it", .timeLimit(.minutes(1)))
    func resumeOvertakenByPause() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let engine = PlaybackSession(output: device.output(clock: clock), soundFont: try await Fixtures.soundFont())
        try await engine.start(Self.song, title: "Long note")
        device.pull(times: 10)
        try await engine.pause()
        // The device asks for nothing now: the resume waits for it to take the song up again.
        let resuming = Task { try await engine.resume() }
        while await engine.state != .playing { await Task.yield() }
        try await engine.pause()
        try await resuming.value
        #expect(await engine.state == .paused, "the pause came last")
        #expect(device.source?.isPaused == true)
        await engine.stop()
    }

    @Test("a source resumed and paused again before any audio was asked for does not wait to be taken up", .timeLimit(.minutes(1)))
    func sourcePausedAgain() async throws {
        let source = try PlaybackSource(song: Self.song, soundFont: try await Fixtures.soundFont())
        defer { source.stop() }
        source.pause()
        source.resume()
        source.pause()
        await source.waitUntilStarted()
        #expect(source.isPaused)
    }
}
