import AsyncSignals
import Clocks
import ComposerCLIKit
@testable import SpeakerdAPI
import Synchronization
import TestSupport
import Testing

@Suite("play --wait when signals do not come")
struct PlaybackWaiterFallbackTests {
    static let playing = StatusReport.Playback(state: "playing", file: "song.mid", positionSeconds: 1, durationSeconds: 90)

    @Test("with signals that never come, the waiter still learns of the song's end from a slow poll every 5 s")
    func slowPollFindsTheEnd() async throws {
        let speakerd = ScriptedSpeakerd([Self.playing, .idle])
        let clock = TestClock()
        let (silentSignals, signals) = AsyncStream.makeStream(of: Void.self)
        let waiter = PlaybackWaiter(control: speakerd, clock: clock)
        let waiting = Task { try await waiter.wait(for: "song.mid", wakeUps: silentSignals) }
        var calls = speakerd.calls.makeAsyncIterator()
        #expect(await calls.next() == 1)

        await clock.advance(by: .seconds(5) + .milliseconds(1))
        #expect(await calls.next() == 2, "no status was asked for after 5 s without signals")
        let outcome = try await waiting.value
        #expect(outcome.playedToEnd)
        #expect(!outcome.isFailure)
        signals.finish()
    }

    @Test("a new speakerd process on the bus ends the wait with a clear sentence instead of a false 'finished'")
    func restartedDaemonIsReported() async throws {
        let speakerd = ScriptedSpeakerd([Self.playing, .idle])
        let owner = Mutex(":1.7")
        let (ownerChanges, ownerChanged) = AsyncStream.makeStream(of: Void.self)
        let waiter = PlaybackWaiter(control: speakerd, clock: TestClock(), daemonInstance: { owner.withLock { $0 } })
        let waiting = Task { try await waiter.wait(for: "song.mid", wakeUps: ownerChanges) }
        var calls = speakerd.calls.makeAsyncIterator()
        #expect(await calls.next() == 1)

        owner.withLock { $0 = ":1.9" } // speakerd restarted; its name has a new owner.
        ownerChanged.yield()
        let outcome = try await waiting.value
        #expect(!outcome.playedToEnd)
        guard case let .daemonRestarted(status) = outcome else {
            Issue.record("expected daemonRestarted, got \(outcome)")
            return
        }
        #expect(status.playback.state == "idle")
        #expect(outcome.sentence(for: "song.mid") == "speakerd restarted while song.mid played; the song is no longer playing")
        #expect(outcome.isFailure)
    }

    @Test("a song whose output failed ends the wait as a failure, with the daemon's reason")
    func failedSongIsAFailure() async throws {
        let failed = StatusReport.Playback(state: "failed", file: "song.mid", positionSeconds: 4, durationSeconds: 90,
                                           error: "audio output alsa:x stopped taking audio mid-song")
        let speakerd = ScriptedSpeakerd([Self.playing, failed])
        let (signals, signal) = AsyncStream.makeStream(of: Void.self)
        signal.yield()
        let outcome = try await PlaybackWaiter(control: speakerd, clock: TestClock()).wait(for: "song.mid", wakeUps: signals)
        #expect(!outcome.playedToEnd)
        #expect(outcome == .failed(reason: "audio output alsa:x stopped taking audio mid-song", outcome.status))
        #expect(outcome.sentence(for: "song.mid") == "song.mid failed: audio output alsa:x stopped taking audio mid-song")
        #expect(outcome.isFailure)
    }
}

/// The D-Bus client's side of `play --wait` on a private bus: a new process taking speakerd's
/// name is a wake-up, and the instance it reports changes.
@Suite("play --wait notices a new speakerd on the bus")
struct DaemonInstanceOnTheBusTests {
    @Test("another connection taking speakerd's name wakes the waiter and changes the daemon instance")
    func nameOwnerChangeIsNoticed() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let first = try await world.connect(), second = try await world.connect()
        defer { first.close(); second.close() }
        try await first.requestName(SpeakerdBus.name)
        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
        let before = try #require(await client.daemonInstance())
        #expect(before == first.uniqueName)

        let wakeUps = try await client.playbackChanges()
        var iterator = wakeUps.makeAsyncIterator()
        // speakerd restarts: the old process lets go of its name, the new one takes it.
        _ = try await first.releaseName(SpeakerdBus.name)
        try await second.requestName(SpeakerdBus.name)
        #expect(await iterator.next() != nil, "the owner change woke nobody")
        var after = await client.daemonInstance()
        while after == nil {  // Between the old owner leaving and the new one arriving.
            _ = await iterator.next()
            after = await client.daemonInstance()
        }
        #expect(after == second.uniqueName)
        #expect(after != before)
        _ = world
    }
}
