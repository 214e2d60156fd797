import AsyncSignals
import BlueZ
import Clocks
import Foundation
import Logging
@testable import Playback
@testable import PlaybackService
@testable import Readiness
@testable import SpeakerdAPI
@testable import Systemd
import TestSupport
import Testing

/// The playback service when the speaker's device dies mid-song: the status must say so, with the
/// reason, instead of "playing" in silence or an unexplained "idle".
@Suite("Dead audio device")
struct DeadDeviceTests {
    @Test("a device that dies mid-song leaves the status failed with its reason until the next song")
    func deadDeviceIsReportedAsFailed() async throws {
        let clock = TestClock()
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let soundFont = try await Fixtures.soundFont()
        let components = PlaybackComponents.sessions(output: { _ in device.output(clock: clock) }, soundFont: { soundFont })
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let journal = Journal()
        let player = Player(
            gate: gate, components: components,
            logger: Logger(label: "speakerd.playback") { JournalLogHandler(label: $0) { line in journal.withLock { $0.append(line) } } })
        // The daemon tells its player which speaker songs go to (the log names it).
        _ = await player.audioPath(to: TargetSpeaker(address: try BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5"), over: nil)
        let changes = await player.changes()
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)

        _ = try await player.play(song, named: "tune.mid")
        device.pull(times: 100)
        #expect(await player.snapshot().activity == .playing)

        let expected = AudioOutputError.deviceStopped(output: "alsa:hand-driven", after: HandDrivenDevice.stallLimit, reason: nil)
        var failure: PlaybackSnapshot?
        for _ in 0..<500 where failure == nil {
            await clock.advance(by: HandDrivenDevice.stallLimit + .milliseconds(1))
            if case .failed = await player.snapshot().activity { break }
        }
        for await change in changes {
            if change.activity == .failed { failure = change; break }
        }
        #expect(failure?.file == "tune.mid")
        #expect(failure?.error == expected.description)
        // The journal says it once, naming the song, the speaker and why (after the song's start).
        #expect(journal.withLock { $0 } == [
            "<6>speakerd.playback: playing tune.mid on JBL Flip 5 (11:22:33:AA:BB:CC)\n",
            "<3>speakerd.playback: playback of tune.mid on JBL Flip 5 (11:22:33:AA:BB:CC) failed: \(expected.description)\n",
        ])

        let status = await player.snapshot()
        #expect(status.activity == .failed)
        #expect(status.file == "tune.mid")
        #expect(status.error == expected.description)
        #expect((status.positionSeconds ?? 0) > 0 && (status.positionSeconds ?? 0) < 10)
        #expect(StatusReport.Playback(status) == StatusReport.Playback(state: "failed", file: "tune.mid", positionSeconds: status.positionSeconds,
                                                       durationSeconds: 10, error: expected.description))
        await #expect(throws: PlaybackServiceError.nothingPlaying(operation: "pause")) { try await player.pause() }

        // The next song starts normally, and the failure is forgotten.
        _ = try await player.play(song, named: "next.mid")
        let next = await player.snapshot()
        #expect(next.activity == .playing)
        #expect(next.error == nil)
        await player.stop()
    }

    @Test("a failed song's reason reaches `status --json` and the human status line")
    func failedStatusIsReported() throws {
        let playback = StatusReport.Playback(state: "failed", file: "tune.mid", positionSeconds: 3, durationSeconds: 10,
                                             error: "audio output alsa:x stopped taking audio mid-song")
        let report = StatusReport(readiness: "playbackReady", message: "ready", speaker: nil, playback: playback)
        let json = ReportJSON.encode(report)
        #expect(json.contains("\"error\" : \"audio output alsa:x stopped taking audio mid-song\""), "\(json)")
        #expect(report.humanReadable.contains("Playback:  failed tune.mid 0:03 / 0:10: audio output alsa:x stopped taking audio mid-song"))
        let idle = ReportJSON.encode(StatusReport(readiness: "ready", message: "", speaker: nil, playback: .idle))
        #expect(!idle.contains("error"), "the key appears without a failure: \(idle)")
        #expect(try SpeakerdDBusRecords.playback(from: SpeakerdDBusRecords.encode(playback)) == playback)
    }
}
