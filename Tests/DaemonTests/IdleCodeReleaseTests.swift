@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import Daemon
import PlaybackService
import Synchronization
import TestSupport
import Testing
import Configuration

/// The idle daemon gives its code pages back to the kernel (issue 22's idle PSS): once start-up
/// has run, and when playback has been quiet for a while, and only ever pages that are the
/// file's own.
@Suite("Idle code given back to the kernel")
struct IdleCodeReleaseTests {
    /// Counts the releases a daemon or feature asks for.
    final class Releases: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func record() { count.withLock { $0 += 1 } }
    }

    /// Lets `clock`'s sleepers and the feature's actor run between checks.
    static func settle() async {
        for _ in 0..<20 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(5))
    }

    @Test("only private, read-only, executable file mappings with no page written here are released")
    func onlyTheFilesOwnCode() {
        let smaps = """
            55d0a0000000-55d0a0100000 r--p 00000000 fe:01 1234 /usr/bin/speakerd
            Rss:                 400 kB
            Anonymous:             0 kB
            55d0a0100000-55d0a0e00000 r-xp 00100000 fe:01 1234 /usr/bin/speakerd
            Rss:               10700 kB
            Private_Dirty:     10700 kB
            Anonymous:             0 kB
            55d0a0e00000-55d0a0e80000 r-xp 00e00000 fe:01 1235 /usr/lib/speakerd/libSpeakerCore.so
            Rss:                 512 kB
            Anonymous:             8 kB
            55d0a0f00000-55d0a0f80000 rw-p 00f00000 fe:01 1234 /usr/bin/speakerd
            Rss:                 200 kB
            Anonymous:             0 kB
            7ffd1000-7ffd3000 r-xp 00000000 00:00 0                          [vdso]
            Rss:                   4 kB
            Anonymous:             0 kB
            7f0000000000-7f0000200000 r-xp 00000000 fe:01 99   /usr/lib/x86_64-linux-gnu/libc.so.6
            Rss:                1200 kB
            Anonymous:             0 kB
            """
        let mappings = ResidentCode.releasableMappings(in: smaps)
        // The program's code, dirty in the page cache (just installed) but never written here: kept
        // as releasable. The library's code has a page written through its mapping (a breakpoint):
        // not. Data, the vDSO and the read-only segment are never candidates.
        #expect(mappings.map(\.path) == ["/usr/bin/speakerd", "/usr/lib/x86_64-linux-gnu/libc.so.6"])
        #expect(mappings.first?.residentBytes == 10700 * 1024)
        #expect(mappings.first?.start == 0x55d0_a010_0000)
        // Which files are "ours" is `release()`'s choice: the program and lib/speakerd beside it.
        #expect(ResidentCode.privateLibraryDirectory(of: "/usr/bin/speakerd") == "/usr/lib/speakerd/")
        #expect(ResidentCode.privateLibraryDirectory(of: "/opt/x/bin/speakerd") == "/opt/x/lib/speakerd/")
    }

    /// The resident bytes of this test program's own code, as the kernel counts them.
    static func residentProgramCode() throws -> Int {
        let program = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let smaps = try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        return ResidentCode.releasableMappings(in: smaps).filter { $0.path == program }.map(\.residentBytes).reduce(0, +)
    }

    @Test("released in this very process, with other tests running: the code's pages leave it, and the code still runs")
    func releasedAndStillRunning() async throws {
        let before = try Self.residentProgramCode()
        #expect(before > 0, "the test program has no resident code to release")
        let released = ResidentCode.release()
        #expect(released.mappings >= 1)
        #expect(released.residentBytes >= before / 2, "released \(released.residentBytes) of \(before) resident bytes")
        // What runs from here faults back in from the page cache (this very test, the runner).
        let after = try Self.residentProgramCode()
        #expect(after < before, "resident code \(before) → \(after) bytes")
        let sum = (1...1000).reduce(0, +)
        #expect(sum == 500_500)
        try await Task.sleep(for: .milliseconds(10))
    }

    @Test("start-up's code is released 5 s after its graph ran; a song's 30 s after playback went quiet; never while a song plays, nor while songs follow one another")
    func whenQuiet() async throws {
        let clock = TestClock<Duration>()
        let releases = Releases()
        let feature = IdleCodeFeature(release: { releases.record() }, clock: ErasedClock(clock))
        /// Time passes on the test clock, and what it woke has run.
        func elapse(_ duration: Duration) async {
            await clock.advance(by: duration)
            await Self.settle()
        }

        await feature.startupEnded()
        await Self.settle()
        await elapse(.seconds(4))
        #expect(releases.value == 0, "released before start-up's stragglers had run")
        await elapse(.seconds(1))
        #expect(releases.value == 1)

        // A song plays and ends; another starts 20 s later: nothing is released in between.
        await feature.playback(.playing)
        await feature.playback(.stopped)
        await Self.settle()
        await elapse(.seconds(20))
        await feature.playback(.waiting)
        await feature.playback(.playing)
        await Self.settle()
        await elapse(.seconds(40))
        #expect(releases.value == 1, "released while a song played")

        // It ends; 30 s of quiet (more quiet reports meanwhile do not restart the wait) and it is released.
        await feature.playback(.stopped)
        await Self.settle()
        await elapse(.seconds(15))
        await feature.playback(.idle)
        await elapse(.seconds(15))
        #expect(releases.value == 2)

        // Start-up runs again while a song plays (bluetoothd came back mid-song): nothing is
        // released during the song; its quiet does it.
        await feature.playback(.playing)
        await feature.startupEnded()
        await elapse(.seconds(20))
        #expect(releases.value == 2, "released while a song played after start-up ran again")
        await feature.playback(.stopped)
        await Self.settle()
        await elapse(.seconds(30))
        #expect(releases.value == 3)

        // Wound down: a quiet report arms nothing.
        await feature.stop()
        await feature.playback(.stopped)
        await elapse(.seconds(60))
        #expect(releases.value == 3)
    }

    @Test("a regular start, the speaker connected and idle: the daemon gives its code back once, 5 s after start-up")
    func daemonReleasesAfterStartup() async throws {
        let speaker = DaemonWorld.flip
        let bluez = FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: try BluetoothAddress(speaker.address), name: speaker.name, deviceClass: 0x240414, paired: true, trusted: true)])
        let state = TemporaryDirectory()
        DaemonWorld.remember([speaker], in: state)
        let clock = TestClock<Duration>()
        let releases = Releases()
        var dependencies = DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez }, playback: IdlePlayback())
        dependencies.releaseIdleCode = { releases.record() }
        let daemon = SpeakerdDaemon(
            configuration: DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path),
            dependencies: dependencies, notifier: nil, logger: Logger(label: "test.speakerd"))
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(30), until: "start-up ran") { started.isSet }
        #expect(daemon.gate.isReached(.playbackReady))
        #expect(releases.value == 0)
        _ = try await clock.advance(atMost: .seconds(6), until: "start-up's code was given back") { releases.value == 1 }
        await daemon.shutdown()
        await clock.advance(by: .seconds(60))
        #expect(releases.value == 1)
    }

    private struct IdlePlayback: StandInPlayback {}
}
