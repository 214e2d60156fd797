import AsyncSignals
import Clocks
import Foundation
@testable import Playback
import PlaybackService
@testable import Readiness
@testable import SpeakerdAPI
import Synchronization
import TestSupport

/// A player wired as the daemon wires it, but with a test clock for every timeout and for
/// the pace of the audio, and a real WAV output per song (`song-0.wav`, `song-1.wav`, … in a
/// directory of its own), so tests judge what a listener would have heard.
struct PlayerHarness {
    let clock = TestClock()
    let gate: ReadinessGate<DaemonReadiness>
    let player: Player
    let directory: URL

    init(initial: DaemonReadiness = .speakerConnected, settings: PlaybackServiceSettings = PlaybackServiceSettings()) async throws {
        let clock = clock
        gate = ReadinessGate(initial: initial, clock: clock)
        directory = try Fixtures.temporaryDirectory()
        let soundFont = try await Fixtures.soundFont()
        let songs = Mutex(0)
        let directory = directory
        let components = PlaybackComponents.sessions(
            output: { _ in
                let index = songs.withLock { count in
                    defer { count += 1 }
                    return count
                }
                return WAVFileOutput(path: directory.appendingPathComponent("song-\(index).wav").path, pacing: .realTime(clock))
            },
            clock: clock,
            soundFont: { soundFont }
        )
        player = Player(gate: gate, settings: settings, components: components)
        // What the daemon tells its player while the speaker is still on its way.
        if initial < .playbackReady {
            await player.readinessChanged(PlaybackWait(message: "connecting to JBL Flip 5", waitingCanSucceed: true))
        }
    }

    func request(_ bytes: [UInt8], named name: String, queue: Bool = false) throws -> (PlayRequest, OpenedFile) {
        try ClientSongs.request(bytes, named: name, in: directory, queue: queue)
    }

    /// Sends `bytes` as a client would and returns once the song is playing (or waiting).
    @discardableResult
    func startPlaying(_ bytes: [UInt8], named name: String) async throws -> PlaybackSnapshot {
        let (request, _) = try self.request(bytes, named: name)
        return try await player.play(request)
    }

    /// The WAV of the `index`-th song (complete once that song ended or was stopped).
    func wav(_ index: Int) throws -> WAVFile {
        try WAVFile(path: directory.appendingPathComponent("song-\(index).wav").path)
    }

    /// Waits (real time, at most 20 s) until the hidden partial file of output `index`, still
    /// being written, holds audio of a length (in seconds) that `holds` accepts.
    func waitForPartial(_ index: Int, until holds: (Double) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        let prefix = ".song-\(index).wav."
        while ContinuousClock.now < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names where name.hasPrefix(prefix) && name.hasSuffix(".partial") {
                if let seconds = Self.partialSeconds(directory.appendingPathComponent(name).path), holds(seconds) { return true }
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// Seconds of 16-bit stereo audio in a WAV still being written: its header has the sample
    /// rate but not yet the sizes, so the length comes from the file's size.
    private static func partialSeconds(_ path: String) -> Double? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 44), header.count == 44,
              let size = try? handle.seekToEnd(), size > 44 else { return nil }
        let rate = header[24..<28].reversed().reduce(0) { $0 << 8 | Int($1) }
        guard rate > 0 else { return nil }
        return Double(Int(size) - 44) / Double(rate * 4)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits, without sleeping (yielding to the player's tasks), until `condition` holds.
    func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
    }

    /// Advances the clock in steps of 100 ms, letting the render loops keep up between steps.
    func play(for duration: Duration) async {
        var left = duration
        while left > .zero {
            let step = min(left, .milliseconds(100))
            await clock.advance(by: step)
            left -= step
        }
    }

    func activity() async -> PlaybackSnapshot.Activity { await player.snapshot().activity }
    func position() async -> Double { await player.snapshot().positionSeconds ?? -1 }
}

extension PlaybackSnapshot {
    /// The same song in the same activity: what the tests compare in a change stream, where
    /// progress moves only the position.
    func isSameMoment(as other: PlaybackSnapshot) -> Bool {
        activity == other.activity && file == other.file && pauseReason == other.pauseReason
            && queued == other.queued && error == other.error
    }
}
