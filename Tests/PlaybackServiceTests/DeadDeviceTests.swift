import AsyncSignals
import AudioPath
import BlueZ
import Clocks
import Foundation
import Logging
import Synchronization
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
    @Test("a device that dies mid-song, and again each time it is opened again, leaves the status failed with its reason until the next song")
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
        await player.routeChanged(to: TargetSpeaker(address: try BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5"), route: nil)
        let changes = await player.changes()
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)

        _ = try await player.play(song, named: "tune.mid")
        device.pull(times: 100)
        #expect(await player.snapshot().activity == .playing)

        let stopped = AudioOutputError.deviceStopped(output: "alsa:hand-driven", after: HandDrivenDevice.stallLimit, reason: nil)
        let expected = "\(stopped) (opened again 3 times; it stopped each time)"
        var failure: PlaybackSnapshot?
        for _ in 0..<500 where failure == nil {
            await clock.advance(by: HandDrivenDevice.stallLimit + .milliseconds(1))
            if case .failed = await player.snapshot().activity { break }
        }
        for await change in changes {
            if change.activity == .failed { failure = change; break }
        }
        #expect(failure?.file == "tune.mid")
        #expect(failure?.error == expected)
        #expect(device.opens == 4, "opened \(device.opens) times, not once and again three times")
        // The journal says each new stream, then the failure once, naming the song, the speaker
        // and why (after the song's start).
        let lines = journal.withLock { $0 }
        #expect(lines.first == "<6>speakerd.playback: playing tune.mid on JBL Flip 5 (11:22:33:AA:BB:CC)\n")
        #expect(lines.dropFirst().dropLast().map { $0.hasPrefix("<4>speakerd.playback: tune.mid on JBL Flip 5 (11:22:33:AA:BB:CC): its output stopped taking audio at ") }
            == [true, true, true], "\(lines)")
        #expect(lines.last == "<3>speakerd.playback: playback of tune.mid on JBL Flip 5 (11:22:33:AA:BB:CC) failed: \(expected)\n")

        let status = await player.snapshot()
        #expect(status.activity == .failed)
        #expect(status.file == "tune.mid")
        #expect(status.error == expected)
        #expect((status.positionSeconds ?? 0) > 0 && (status.positionSeconds ?? 0) < 10)
        #expect(StatusReport.Playback(status) == StatusReport.Playback(state: "failed", file: "tune.mid", positionSeconds: status.positionSeconds,
                                                       durationSeconds: 10, error: expected))
        await #expect(throws: PlaybackServiceError.nothingPlaying(operation: "pause")) { try await player.pause() }

        // The next song starts normally, and the failure is forgotten.
        _ = try await player.play(song, named: "next.mid")
        let next = await player.snapshot()
        #expect(next.activity == .playing)
        #expect(next.error == nil)
        await player.stop()
    }

    @Test("""
        a device that stops taking audio once with the speaker still there (a sound server's Bluetooth node failing) \
        is opened again: the song goes on, on the new stream, and nothing fails
        """)
    func stoppedDeviceIsOpenedAgain() async throws {
        let clock = TestClock()
        let stalls = HandDrivenDevice(pullsOnOpen: 1), works = HandDrivenDevice(pullsOnOpen: 1)
        let devices = Mutex([stalls, works])
        let soundFont = try await Fixtures.soundFont()
        let components = PlaybackComponents.sessions(output: { _ in devices.withLock { $0.removeFirst() }.output(clock: clock) },
                                                     clock: clock, soundFont: { soundFont })
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let journal = Journal()
        let player = Player(
            gate: gate, components: components,
            logger: Logger(label: "speakerd.playback") { JournalLogHandler(label: $0) { line in journal.withLock { $0.append(line) } } })
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)
        _ = try await player.play(song, named: "tune.mid")
        stalls.pull(times: 200)
        let rendered = await player.snapshot().positionSeconds ?? 0

        // The device goes quiet; the watchdog notices, and the player opens the output again.
        for _ in 0..<500 where works.opens == 0 {
            await clock.advance(by: HandDrivenDevice.stallLimit + .milliseconds(1))
            for _ in 0..<100 where works.opens == 0 { await Task.yield() }
        }
        #expect(works.opens == 1, "the output was never opened again")
        #expect(await eventually { await player.snapshot().activity == .playing })
        works.pull(times: 400)
        let position = try #require(await player.snapshot().positionSeconds)
        #expect(position > rendered, "the song did not go on on the new stream (at \(position) s, was at \(rendered) s)")
        #expect(stalls.opens == 1)
        #expect(journal.withLock { $0 }.contains { $0.contains("tune.mid: its output stopped taking audio at ") && $0.hasSuffix("opening it again (1 of 3)\n") })
        #expect(!journal.withLock { $0 }.contains { $0.contains("failed") })
        await player.stop()
    }

    @Test("""
        a song paused by the speaker's loss resumes on the speaker's device opened again when it is back, \
        not on the handle that outlived the link (BlueALSA's old PCM, which fails only after the resume)
        """)
    func speakerBackOpensTheDeviceAgain() async throws {
        let clock = TestClock()
        // The handle opened before the drop goes on taking audio, as an ALSA handle on BlueALSA's
        // vanished PCM did against real bluetoothd: nothing fails until well after the resume.
        let beforeDrop = HandDrivenDevice(pullsOnOpen: 1), afterReturn = HandDrivenDevice(pullsOnOpen: 1)
        let devices = Mutex([beforeDrop, afterReturn])
        let soundFont = try await Fixtures.soundFont()
        // `auto`, as the daemon wires it: the backend decides whether the output is opened again.
        let backend = AudioOutputSetting.automatic.backend(soundServers: SoundServerLocation())
        let components = PlaybackComponents.sessions(
            output: { _ in devices.withLock { $0.removeFirst() }.output(clock: clock) }, clock: clock,
            newOutputWhenSpeakerBack: { backend.outputGoesWithSpeaker }, soundFont: { soundFont })
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let player = Player(gate: gate, components: components)
        await player.routeChanged(to: TargetSpeaker(address: try BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5"), route: nil)
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 5)], duration: 10)
        _ = try await player.play(song, named: "tune.mid")
        beforeDrop.pull(times: 100)

        gate.drop(to: .adapter)
        #expect(await eventually { await player.snapshot().activity == .paused })
        let pausedAt = try #require(await player.snapshot().positionSeconds)
        beforeDrop.pull(times: 100) // Silence into the dead handle: the song must not move.

        gate.raise(to: .playbackReady)
        #expect(await eventually { afterReturn.opens == 1 }, "the song went on on the handle from before the drop")
        #expect(await player.snapshot().activity == .playing)
        afterReturn.pull(times: 200)
        let position = try #require(await player.snapshot().positionSeconds)
        #expect(position > pausedAt + 0.2, "the song did not go on from \(pausedAt) s on the new device (at \(position) s)")
        #expect(beforeDrop.opens == 1)
        await player.stop()
    }

    @Test("only a file or the null output is kept when the speaker comes back; every device output is opened again")
    func whichOutputsOpenAgain() {
        #expect(AudioOutputSetting.automatic.backend(soundServers: SoundServerLocation()).outputGoesWithSpeaker)
        #expect(AudioOutputSetting.pulseAudio.backend(soundServers: SoundServerLocation()).outputGoesWithSpeaker)
        #expect(AudioOutputSetting.alsa(device: "bluealsa").backend(soundServers: SoundServerLocation()).outputGoesWithSpeaker)
        #expect(!AudioOutputSetting.file(path: "/tmp/song.wav").backend(soundServers: SoundServerLocation()).outputGoesWithSpeaker)
        #expect(!AudioOutputSetting.null.backend(soundServers: SoundServerLocation()).outputGoesWithSpeaker)
    }

    /// Waits, without sleeping (yielding to the player's tasks), until `condition` holds.
    private func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
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
