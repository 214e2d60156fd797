import AsyncSignals
import Clocks
import Foundation
@testable import Playback
import Synchronization
import TestSupport
import Testing

/// One song's session as a user drives it, on a null or file output paced by a test clock:
/// time only moves when the test moves it.
@Suite("Playback session")
struct PlaybackSessionTests {
    /// A 10 s song: one long note, so there is always something to pause.
    private let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 9.5)], duration: 10)

    /// Waits (without sleeping: yielding to the engine's tasks) until `condition` holds.
    private func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
    }

    @Test("play, pause, resume and stop move position only while playing, and report each step")
    func pauseResumeStop() async throws {
        let clock = TestClock()
        let engine = PlaybackSession(output: NullOutput(pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        let events = await engine.events()
        #expect(await engine.state == .idle)

        try await engine.start(song, title: "Long note")
        #expect(await engine.state == .playing)
        #expect(await engine.durationSeconds == 10)

        await clock.advance(by: .seconds(2))
        #expect(await eventually { await engine.positionSeconds >= 1.95 })
        #expect(await engine.positionSeconds < 2.1)

        try await engine.pause()
        #expect(await engine.state == .paused)
        let pausedAt = await engine.positionSeconds
        #expect(await engine.state.name == "paused")
        #expect(await engine.title == "Long note")
        #expect(await engine.durationSeconds == 10)
        await clock.advance(by: .seconds(5))
        for _ in 0..<1000 { await Task.yield() }
        #expect(await engine.positionSeconds == pausedAt, "position moved while paused")

        try await engine.resume()
        #expect(await engine.state == .playing)
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= pausedAt + 0.95 })
        #expect(await engine.positionSeconds < pausedAt + 1.1)

        await engine.stop()
        #expect(await engine.state == .stopped)
        let stoppedAt = await engine.positionSeconds
        await clock.advance(by: .seconds(3))
        #expect(await engine.positionSeconds == stoppedAt)

        var seen: [PlaybackEvent] = []
        for await event in events {
            if case .progress = event { continue }
            seen.append(event)
            if case .stopped = event { break }
        }
        #expect(seen.count == 4)
        guard seen.count == 4 else { return }
        #expect(seen[0] == .started(title: "Long note", durationSeconds: 10))
        #expect(seen[1] == .paused(positionSeconds: pausedAt))
        #expect(seen[2] == .resumed(positionSeconds: pausedAt))
        #expect(seen[3] == .stopped(positionSeconds: stoppedAt))
    }

    @Test("a song played to its end finishes, with progress reports on the way")
    func playsToTheEnd() async throws {
        let clock = TestClock()
        let engine = PlaybackSession(output: NullOutput(pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        let events = await engine.events()
        let short = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 1)], duration: 1.5)
        var iterator = events.makeAsyncIterator()
        try await engine.start(short, title: "Short")
        #expect(await iterator.next() == .started(title: "Short", durationSeconds: 1.5))
        var progress: [Double] = []
        for _ in 0..<2 {
            await clock.advance(by: .milliseconds(500))
            if case let .progress(position, duration) = await iterator.next() {
                #expect(duration == 1.5)
                progress.append(position)
            }
        }
        #expect(progress.count == 2, "progress: \(progress)")
        #expect(progress == progress.sorted())
        #expect(progress.allSatisfy { $0 > 0 && $0 < 1.1 }, "progress: \(progress)")

        await clock.advance(by: .seconds(3))
        #expect(await engine.waitUntilEnded() == .finished)
        #expect(await engine.positionSeconds == 1.5)
        var last: PlaybackEvent?
        while let event = await iterator.next() {
            last = event
            if case .finished = event { break }
        }
        #expect(last == .finished(title: "Short"))
    }

    @Test("a play request made while the SoundFont is still loading waits for it, then plays")
    func playWaitsForSoundFont() async throws {
        let clock = TestClock()
        let (loaded, deliver) = AsyncStream.makeStream(of: SoundFont.self)
        let engine = PlaybackSession(output: NullOutput(pacing: .realTime(clock)), clock: clock) {
            for await font in loaded { return font }
            throw CancellationError()
        }
        let request = Task { try await engine.start(song, title: "Early request") }
        #expect(await eventually { await engine.state == .loading })
        #expect(await engine.positionSeconds == 0)

        deliver.yield(try await Fixtures.soundFont())
        try await request.value
        #expect(await engine.state == .playing)
        await engine.stop()
    }

    @Test("pause and resume are refused when nothing plays, with a clear message")
    func refusesPauseWhenIdle() async throws {
        let engine = PlaybackSession(output: NullOutput(pacing: .offline), soundFont: try await Fixtures.soundFont())
        let error = await #expect(throws: PlaybackSessionError.self) { try await engine.pause() }
        #expect(error?.description == "cannot pause: playback is idle")
        await #expect(throws: PlaybackSessionError.self) { try await engine.resume() }
        await engine.stop()
        #expect(await engine.state == .idle)
    }

    @Test("a session plays one song: a second start is refused while the first plays on; the next song's session reuses the SoundFont")
    func oneSongPerSession() async throws {
        let clock = TestClock()
        let soundFont = try await Fixtures.soundFont()
        let first = PlaybackSession(output: NullOutput(pacing: .realTime(clock)), soundFont: soundFont, clock: clock)
        try await first.start(song, title: "First")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await first.positionSeconds >= 0.95 })
        let second = Fixtures.song(program: Fixtures.piano, notes: [(64, 0, 1)], duration: 2)
        let refusal = await #expect(throws: PlaybackSessionError.self) { try await first.start(second, title: "Second") }
        #expect(refusal?.description == "cannot start Second: playback is playing")
        #expect(await first.title == "First")
        #expect(await first.state == .playing)
        #expect(await first.durationSeconds == 10)
        await first.stop()

        let next = PlaybackSession(output: NullOutput(pacing: .realTime(clock)), soundFont: soundFont, clock: clock)
        try await next.start(second, title: "Second")
        #expect(await next.title == "Second")
        #expect(await next.durationSeconds == 2)
        #expect(await next.positionSeconds < 0.1)
        await next.stop()
    }

    @Test("a missing SoundFont fails the play request with a clear message")
    func missingSoundFontFailsPlay() async throws {
        let engine = PlaybackSession(output: NullOutput(pacing: .offline)) {
            try await SoundFont.load(path: "/nonexistent/font.sf2")
        }
        await #expect(throws: SoundFontError.missing(path: "/nonexistent/font.sf2")) {
            try await engine.start(song, title: "x")
        }
        #expect(await engine.state == .failed(SoundFontError.missing(path: "/nonexistent/font.sf2").description))
    }

    @Test("a WAV recording stopped early is a valid, shorter WAV")
    func stoppedRecordingIsValid() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("recording.wav").path
        let engine = PlaybackSession(output: WAVFileOutput(path: path, pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        try await engine.start(song, title: "Recording")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= 0.95 })
        await engine.stop()

        let wav = try WAVFile(path: path)
        #expect(wav.seconds > 0.9 && wav.seconds < 1.2, "recorded \(wav.seconds) s")
        #expect(WAVAnalysis.rms(wav.monoFloat[...]) > 0.001)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(leftovers == ["recording.wav"])
    }

    @Test("a paused WAV recording does not grow: the file holds only the time actually played")
    func pausedRecordingDoesNotGrow() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("paused.wav").path
        let engine = PlaybackSession(output: WAVFileOutput(path: path, pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        try await engine.start(song, title: "Paused recording")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= 0.95 })
        try await engine.pause()
        await clock.advance(by: .seconds(5))
        try await engine.resume()
        let resumedAt = await engine.positionSeconds
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= resumedAt + 0.95 })
        await engine.stop()

        let wav = try WAVFile(path: path)
        #expect(wav.seconds > 1.9 && wav.seconds < 2.2, "recorded \(wav.seconds) s for 2 s played around a 5 s pause")
    }

    @Test("a paused song moved to a new output (speaker reconnected) resumes there where it paused")
    func replaceOutputWhilePaused() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("after-reconnect.wav").path
        let engine = PlaybackSession(output: NullOutput(pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        try await engine.start(song, title: "Reconnected")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= 0.95 })
        try await engine.pause()
        let pausedAt = await engine.positionSeconds

        try await engine.replaceOutput(with: WAVFileOutput(path: path, pacing: .realTime(clock)))
        #expect(await engine.state == .paused)
        #expect(await engine.output.description == "file:\(path)")
        await clock.advance(by: .seconds(3))
        #expect(await engine.positionSeconds == pausedAt)

        try await engine.resume()
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= pausedAt + 0.95 })
        await engine.stop()
        let wav = try WAVFile(path: path)
        #expect(wav.seconds > 0.9 && wav.seconds < 1.2, "the new output got \(wav.seconds) s")
    }

    @Test("a song paused long enough for its output to sit waiting for the resume can still be moved to a new output, at once, and resumes there")
    func replaceOutputLongPaused() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("before.wav").path
        let second = directory.appendingPathComponent("after.wav").path
        let engine = PlaybackSession(output: WAVFileOutput(path: first, pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        try await engine.start(song, title: "Long pause")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= 0.95 })
        try await engine.pause()
        let pausedAt = await engine.positionSeconds
        // Past the block being paced: the old output's loop now waits for the resume itself.
        await clock.advance(by: .seconds(2))
        for _ in 0..<20 { await Task.yield() }

        // The speaker came back on a new device while paused: the move must not wait for a resume.
        final class Moved: Sendable { let done = Mutex(false) }
        let moved = Moved()
        let move = Task {
            try await engine.replaceOutput(with: WAVFileOutput(path: second, pacing: .realTime(clock)))
            moved.done.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !moved.done.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(moved.done.withLock { $0 }, "replaceOutput waited for a resume that had not come")
        #expect(await engine.state == .paused)
        #expect(await engine.output.description == "file:\(second)")
        #expect(await engine.positionSeconds == pausedAt)

        try await engine.resume()
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= pausedAt + 0.95 })
        try await move.value
        await engine.stop()
        let before = try WAVFile(path: first), after = try WAVFile(path: second)
        #expect(before.seconds > 0.9 && before.seconds < 1.2, "the first output got \(before.seconds) s (nothing after the move)")
        #expect(after.seconds > 0.9 && after.seconds < 1.2, "the new output got \(after.seconds) s")
    }

    @Test("a playing song moved to a new output goes on there without restarting")
    func replaceOutputWhilePlaying() async throws {
        let clock = TestClock()
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("first.wav").path
        let second = directory.appendingPathComponent("second.wav").path
        let engine = PlaybackSession(output: WAVFileOutput(path: first, pacing: .realTime(clock)),
                                    soundFont: try await Fixtures.soundFont(), clock: clock)
        try await engine.start(song, title: "Moved")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= 0.95 })
        try await engine.replaceOutput(with: WAVFileOutput(path: second, pacing: .realTime(clock)))
        #expect(await engine.state == .playing)
        let movedAt = await engine.positionSeconds
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await engine.positionSeconds >= movedAt + 0.95 })
        await engine.stop()

        let before = try WAVFile(path: first), after = try WAVFile(path: second)
        #expect(before.seconds > 0.9 && before.seconds < 1.2, "first output got \(before.seconds) s")
        #expect(after.seconds > 0.9 && after.seconds < 1.2, "second output got \(after.seconds) s")
        #expect(WAVAnalysis.rms(after.monoFloat[...]) > 0.001, "the song went on sounding")
    }

    @Test("a song plays to its end through FluidSynth's ALSA driver (ALSA's null PCM), pulled by the device thread")
    func playsThroughALSADriver() async throws {
        let engine = PlaybackSession(output: DeviceOutput(.alsa(device: "null")), soundFont: try await Fixtures.soundFont())
        let short = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.2)], duration: 0.3)
        try await engine.start(short, title: "Through ALSA")
        #expect(await engine.waitUntilEnded() == .finished)
        #expect(await engine.positionSeconds == 0.3)
    }

    @Test("an ALSA device that does not exist fails the song with a clear message")
    func missingALSADeviceFails() async throws {
        let engine = PlaybackSession(output: DeviceOutput(.alsa(device: "speakerd_no_such_device")),
                                    soundFont: try await Fixtures.soundFont())
        let error = await #expect(throws: AudioOutputError.self) { try await engine.start(song, title: "Nowhere") }
        guard case let .deviceUnavailable(output, _) = error else {
            Issue.record("expected deviceUnavailable, got \(String(describing: error))")
            return
        }
        #expect(output == "alsa:speakerd_no_such_device")
        let message = error?.description ?? ""
        #expect(message.hasPrefix("audio output alsa:speakerd_no_such_device could not be opened"))
        #expect(!message.contains("\n"))
        #expect(await engine.state == .failed(message))
    }
}
