@testable import AudioPath
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

/// What the status calls "now" is what the speaker plays now: the rendered position less the
/// output's latency. And audio an output held but never played when the speaker dropped is not
/// skipped: the song goes on from where the listener stopped hearing it.
@Suite("The heard position")
struct HeardPositionTests {
    /// Middle C for the first second, then G for two: a place in the song is told by which note
    /// sounds, and a note's start by its attack.
    private let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 1), (67, 1, 3)], duration: 4)

    private func player(devices: [HandDrivenDevice], clock: TestClock<Duration>, gate: ReadinessGate<DaemonReadiness>) async throws -> Player {
        let soundFont = try await Fixtures.soundFont()
        let queue = Mutex(devices)
        let components = PlaybackComponents.sessions(
            output: { _ in queue.withLock { $0.removeFirst() }.output(clock: clock) }, clock: clock,
            newOutputWhenSpeakerBack: { true }, soundFont: { soundFont })
        let player = Player(gate: gate, components: components)
        await player.routeChanged(to: TargetSpeaker(address: try BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5"), route: nil)
        return player
    }

    /// Pulls periods of 64 frames until `seconds` of the song are rendered.
    private func pull(_ device: HandDrivenDevice, seconds: Double) async throws {
        let source = try #require(device.source)
        device.pull(times: Int((seconds * Double(source.sampleRate) / 64).rounded(.up)))
    }

    /// A speaker about to drop mid-song: the song rendered to 1.25 s (G began at 1.0 s) on an
    /// output half a second behind, like a Bluetooth sink with its stream's buffer, so the
    /// speaker has heard 0.75 s; `afterReturn` records what the speaker hears once it is back.
    private struct SpeakerAboutToDrop {
        let clock: TestClock<Duration>
        let gate: ReadinessGate<DaemonReadiness>
        let rate: Int
        let beforeDrop: HandDrivenDevice
        let afterReturn: HandDrivenDevice
        let player: Player

        /// How much C and G sound between `from` and `to` seconds of what the speaker heard after
        /// it came back.
        func heardAfterReturn(_ from: Double, _ to: Double) -> (c: Double, g: Double) {
            let part = afterReturn.recorded[Int(from * Double(rate))..<Int(to * Double(rate))]
            return (WAVAnalysis.energy(at: 261.6, in: part, sampleRate: rate), WAVAnalysis.energy(at: 392, in: part, sampleRate: rate))
        }
    }

    private func speakerAboutToDrop() async throws -> SpeakerAboutToDrop {
        let clock = TestClock()
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let rate = try await Fixtures.soundFont().sampleRate
        let beforeDrop = HandDrivenDevice(pullsOnOpen: 1, latencyFrames: rate / 2)
        let afterReturn = HandDrivenDevice(pullsOnOpen: 1, records: true)
        let player = try await player(devices: [beforeDrop, afterReturn], clock: clock, gate: gate)
        _ = try await player.play(song, named: "tune.mid")
        try await pull(beforeDrop, seconds: 1.25)
        return SpeakerAboutToDrop(clock: clock, gate: gate, rate: rate, beforeDrop: beforeDrop, afterReturn: afterReturn, player: player)
    }

    @Test("the status's position is the rendered one less the output's latency, and says the latency; a file's has none")
    func statusShowsTheHeardPosition() async throws {
        let clock = TestClock()
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let rate = try await Fixtures.soundFont().sampleRate
        let device = HandDrivenDevice(pullsOnOpen: 1, latencyFrames: rate / 4)
        let player = try await player(devices: [device], clock: clock, gate: gate)
        _ = try await player.play(song, named: "tune.mid")
        try await pull(device, seconds: 1.5)
        let rendered = try #require(device.source).positionSeconds
        #expect(rendered > 1.49)

        await clock.advance(by: PlaybackSession.defaultProgressInterval)
        #expect(await eventually { await player.snapshot().latencySeconds != nil })
        let status = await player.snapshot()
        #expect(status.latencySeconds == 0.25)
        let position = try #require(status.positionSeconds)
        #expect(abs(position - (rendered - 0.25)) < 0.001, "heard \(position) s, rendered \(rendered) s")
        let report = StatusReport.Playback(status)
        #expect(report.latencyMs == 250)
        #expect(report.positionSeconds == position)

        // Paused, the device plays out what it held: then the listener has heard all of it.
        try await player.pause()
        try await pull(device, seconds: 0.3)
        #expect(abs((await player.snapshot().positionSeconds ?? 0) - rendered) < 0.001,
                "the pause played out what the device held: the listener is where rendering paused")
        // Resuming returns once the device asks for audio again.
        let resumed = Task { try await player.resume() }
        #expect(await eventually { !(device.source?.isPaused ?? true) })
        device.pull(times: 1)
        _ = try await resumed.value
        // The song's next frames queue behind the latency again.
        let expected = rendered + 64 / Double(rate) - 0.25
        #expect(abs((await player.snapshot().positionSeconds ?? 0) - expected) < 0.001)
        await player.stop()
    }

    @Test("""
        on BlueALSA the latency is the ALSA driver's buffer and the PCM's Delay behind it (the codec and the link), \
        read again while the song plays, and the heard position is behind by both
        """)
    func blueALSADelayCounts() async throws {
        let clock = TestClock(), pathClock = TestClock()
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let rate = try await Fixtures.soundFont().sampleRate
        let mock = try await MockBlueALSA.start()
        let pcm = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")  // Delay 150: 15 ms
        // FluidSynth's ALSA driver reports its buffer: 16 periods of 64 frames.
        let device = HandDrivenDevice(pullsOnOpen: 1, latencyFrames: 1024)
        let audioPath = BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus), clock: pathClock)
        let speaker = try BluetoothAddress("11:22:33:AA:BB:CC")
        let soundFont = try await Fixtures.soundFont()
        let player = Player(gate: gate, components: .sessions(
            output: { _ in BlueALSAOutput(address: speaker, audioPath: audioPath) { _ in device.output(clock: clock) } },
            clock: clock, soundFont: { soundFont }))
        await player.routeChanged(to: TargetSpeaker(address: speaker, name: "JBL Flip 5"), route: nil)
        _ = try await player.play(song, named: "tune.mid")
        try await pull(device, seconds: 1.5)

        let buffer = 1024 / Double(rate)
        // Each look moves the song's clock to its next progress report; the device keeps pulling
        // meanwhile, as a real one does, so its watchdog never sees a stall however long the bus takes.
        func latency() async -> Double? {
            device.pull(times: 1)
            await clock.advance(by: PlaybackSession.defaultProgressInterval)
            return await player.snapshot().latencySeconds
        }
        try await TestSupport.eventually("the latency is the buffer (\(buffer) s) and BlueALSA's 15 ms") {
            await latency().map { abs($0 - (buffer + 0.015)) < 0.0001 } ?? false
        }
        let status = await player.snapshot()
        let position = try #require(status.positionSeconds)
        let rendered = try #require(device.source).positionSeconds
        #expect(abs(position - (rendered - buffer - 0.015)) < 0.001, "heard \(position) s, rendered \(rendered) s")

        // The speaker's delay report raises BlueALSA's Delay: the next read takes it up.
        try await mock.setProperty("Delay", of: pcm, to: .uint16(2000))
        try await TestSupport.eventually("the latency is the buffer and the 200 ms BlueALSA says now") {
            await pathClock.advance(by: BlueALSAOutput.delayInterval)
            return await latency().map { abs($0 - (buffer + 0.2)) < 0.0001 } ?? false
        }
        await player.stop()
        await mock.stop()
    }

    @Test("BlueALSA's Delay is read in its tenths of a millisecond; a PCM that is gone, or a Delay of another type, reads as unknown")
    func blueALSADelayIsRead() async throws {
        let mock = try await MockBlueALSA.start()
        let pcm = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        let source = BlueALSADBusPCMSource(connection: mock.bus)
        #expect(await source.delay(ofPCM: pcm.rawValue) == .milliseconds(15))
        try await mock.setProperty("Delay", of: pcm, to: .uint16(1234))
        #expect(await source.delay(ofPCM: pcm.rawValue) == .microseconds(123_400))
        try await mock.setProperty("Delay", of: pcm, to: .string("soon"))
        #expect(await source.delay(ofPCM: pcm.rawValue) == nil)
        #expect(await source.delay(ofPCM: "/org/bluealsa/hci0/dev_00_00_00_00_00_01/a2dpsrc/sink") == nil)
        #expect(await source.delay(ofPCM: "not a path") == nil)
        await mock.stop()
    }

    @Test("""
        the speaker dropping takes with it the audio its output held: when it is back the song goes on from \
        where the listener stopped hearing it, the note sounding there struck again, and the note that began in the \
        lost audio is heard from its attack; also when the dead output goes on taking audio for a while after the \
        speaker is gone, as PipeWire's sink did when bluetoothd died
        """, arguments: [0, 1.0])
    func speakerBackGoesOnFromTheHeardPosition(secondsPulledAfterTheDrop: Double) async throws {
        let scene = try await speakerAboutToDrop()
        let (clock, gate, beforeDrop, afterReturn, player) = (scene.clock, scene.gate, scene.beforeDrop, scene.afterReturn, scene.player)

        gate.drop(to: .adapter)
        #expect(await eventually { await player.snapshot().activity == .paused })
        let pausedAt = try #require(await player.snapshot().positionSeconds)
        #expect(abs(pausedAt - 0.75) < 0.01, "paused at \(pausedAt) s: what the speaker had heard is 0.75 s")
        // The speaker's output died with the link: what it is still given, if anything (the pause's
        // silence, twice its latency here), reaches no one and pushes nothing out to a listener.
        try await pull(beforeDrop, seconds: secondsPulledAfterTheDrop)
        await clock.advance(by: PlaybackSession.defaultProgressInterval)
        let stillAt = try #require(await player.snapshot().positionSeconds)
        #expect(abs(stillAt - 0.75) < 0.01, "at \(stillAt) s after the dead output took \(secondsPulledAfterTheDrop) s more: the speaker heard 0.75 s")

        gate.raise(to: .playbackReady)
        #expect(await eventually { afterReturn.opens == 1 })
        #expect(await eventually { await player.snapshot().activity == .playing })
        #expect(await eventually { !(afterReturn.source?.isPaused ?? true) })
        try await pull(afterReturn, seconds: 0.6)

        // The song goes on at 0.75 s: C, sounding there, is struck again, and G's attack comes a
        // quarter of a second in (1.0 s - 0.75 s). Resumed where rendering was (1.25 s), G would
        // sound at once, its attack lost with the old output, and C not at all.
        #expect(WAVAnalysis.peak(afterReturn.recorded[...]) > 0.01, "nothing heard after the speaker came back")
        let beforeG = scene.heardAfterReturn(0.05, 0.22), afterG = scene.heardAfterReturn(0.28, 0.45)
        #expect(beforeG.c > 10 * beforeG.g, "C, sounding where the listener stopped hearing, is heard again first")
        #expect(afterG.g > 10 * afterG.c, "then G")
        #expect(afterG.g > 10 * beforeG.g, "G begins a quarter of a second in, not before")
        await player.stop()
    }

    @Test("""
        an output that stops taking audio with the speaker still there takes with it the audio it held: the song \
        goes on, on a new stream, from where the listener stopped hearing it, the note sounding there struck again
        """)
    func stoppedOutputGoesOnFromTheHeardPosition() async throws {
        let scene = try await speakerAboutToDrop()
        let (clock, afterReturn, player) = (scene.clock, scene.afterReturn, scene.player)

        // The device asks for nothing more; the speaker stays connected (the gate stays up).
        for _ in 0..<500 where afterReturn.opens == 0 {
            await clock.advance(by: HandDrivenDevice.stallLimit + .milliseconds(1))
            for _ in 0..<100 where afterReturn.opens == 0 { await Task.yield() }
        }
        #expect(afterReturn.opens == 1, "the output was never opened again")
        #expect(await eventually { await player.snapshot().activity == .playing })
        #expect(await eventually { !(afterReturn.source?.isPaused ?? true) })
        try await pull(afterReturn, seconds: 0.6)

        // As when the speaker drops: C again first, G's attack a quarter of a second in.
        let beforeG = scene.heardAfterReturn(0.05, 0.22), afterG = scene.heardAfterReturn(0.28, 0.45)
        #expect(beforeG.c > 10 * beforeG.g, "C, sounding where the listener stopped hearing, is heard again first")
        #expect(afterG.g > 10 * afterG.c, "then G")
        #expect(afterG.g > 10 * beforeG.g, "G begins a quarter of a second in, not before")
        await player.stop()
    }

    @Test("""
        a song the user paused just before the speaker dropped: what its output had not yet played out is lost \
        with it, whatever the dead output is still given, and the user's resume once the speaker is back goes on \
        from where the listener stopped hearing it
        """)
    func userPauseThenSpeakerDropGoesOnFromTheHeardPosition() async throws {
        let scene = try await speakerAboutToDrop()
        let (gate, beforeDrop, afterReturn, player) = (scene.gate, scene.beforeDrop, scene.afterReturn, scene.player)
        // Paused, and the speaker plays out 50 ms more (to 0.8 s) before it drops.
        try await player.pause()
        try await pull(beforeDrop, seconds: 0.05)

        gate.drop(to: .adapter)
        // Once the player has taken the drop in, what the dead output takes no longer moves the
        // heard position (until then each period played out still does: a few ms here).
        let source = try #require(beforeDrop.source)
        #expect(await eventually {
            let before = source.heardPositionSeconds
            beforeDrop.pull(times: 1)
            return source.heardPositionSeconds == before
        })
        try await pull(beforeDrop, seconds: 1.0)
        let stillAt = try #require(await player.snapshot().positionSeconds)
        #expect(abs(stillAt - 0.8) < 0.02, "at \(stillAt) s after the dead output took a second more: the speaker heard 0.8 s")
        gate.raise(to: .playbackReady)
        #expect(await player.snapshot().activity == .paused, "a user's pause outlasts the speaker's return")

        let resumed = Task { try await player.resume() }
        #expect(await eventually { afterReturn.opens == 1 })
        #expect(await eventually { !(afterReturn.source?.isPaused ?? true) })
        try await pull(afterReturn, seconds: 0.6)
        _ = try await resumed.value

        // The song goes on at about 0.8 s: C, sounding there, is struck again, and G's attack comes
        // about 0.2 s in. Had the dead output's pulls counted as heard, it would go on at 1.25 s: G at once.
        let beforeG = scene.heardAfterReturn(0.02, 0.17), afterG = scene.heardAfterReturn(0.27, 0.42)
        #expect(beforeG.c > 10 * beforeG.g, "C, sounding where the listener stopped hearing, is heard again first")
        #expect(afterG.g > 10 * afterG.c, "then G")
        await player.stop()
    }

    /// A one-note song played on a hand-driven device with `preRoll` ahead of it; `gaps` reports
    /// the device's underflows once it plays, and the song is pulled to its end. Returns the
    /// player's warnings about gaps.
    func gapWarnings(preRoll: Duration = .zero, gaps: (HandDrivenDevice) -> Void) async throws -> [String] {
        let clock = TestClock()
        let gate = ReadinessGate<DaemonReadiness>(initial: .playbackReady, clock: clock)
        let device = HandDrivenDevice(pullsOnOpen: 1)
        let soundFont = try await Fixtures.soundFont()
        let journal = Journal()
        let player = Player(
            gate: gate, components: PlaybackComponents.sessions(output: { _ in device.output(clock: clock) }, clock: clock,
                                                               preRoll: preRoll, soundFont: { soundFont }),
            logger: Logger(label: "speakerd.playback") { JournalLogHandler(label: $0) { line in journal.record(line) } })
        _ = try await player.play(Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.5)], duration: 1), named: "short.mid")
        gaps(device)
        // To its end, the release tail included.
        for _ in 0..<200 where await player.snapshot().activity == .playing { try await pull(device, seconds: 0.1) }
        #expect(await eventually { await player.snapshot().activity == .idle })
        return journal.containing("gap")
    }

    @Test("gaps the output reported while the song played (a sound server's underflows) are logged as a warning when it ends; none, nothing")
    func gapsAreLogged() async throws {
        for gaps in [0, 2] {
            let warnings = try await gapWarnings { device in for _ in 0..<gaps { device.underflow() } }
            if gaps == 0 {
                #expect(warnings.isEmpty, "\(warnings)")
            } else {
                #expect(warnings == ["<4>speakerd.playback: short.mid was heard with 2 gaps: the sound server ran out of audio while it played (is the machine too busy?)\n"])
            }
        }
    }

    @Test("a gap in the pre-roll's silence (a sound server waking the speaker's sink ran the new stream dry) is no gap in the song: not counted, no warning; one past it is")
    func gapInThePreRollIsNotASongGap() async throws {
        for (ranOutAt, counted) in [(100, false), (44_100 * 3 / 20, false), (44_100 * 3 / 20 + 512, true), (nil, true)] as [(Int?, Bool)] {
            // speakerd's pre-roll: 150 ms of silence ahead of the song on each new stream.
            let warnings = try await gapWarnings(preRoll: .milliseconds(150)) { $0.underflow(atStreamFrame: ranOutAt) }
            if counted {
                #expect(warnings == ["<4>speakerd.playback: short.mid was heard with 1 gap: the sound server ran out of audio while it played (is the machine too busy?)\n"],
                        "ran out at \(String(describing: ranOutAt))")
            } else {
                #expect(warnings.isEmpty, "ran out at frame \(String(describing: ranOutAt)), inside the 150 ms pre-roll: \(warnings)")
            }
        }
    }

    @Test("a file output reports no latency: its position is the rendered one and the status has no latency")
    func fileOutputHasNoLatency() async throws {
        let harness = try await PlayerHarness(initial: .playbackReady)
        defer { harness.cleanUp() }
        try await harness.startPlaying(ClientSongs.sustainedA4(seconds: 2), named: "song.mid")
        await harness.play(for: .seconds(1))
        let status = await harness.player.snapshot()
        #expect(status.activity == .playing)
        #expect(status.latencySeconds == nil)
        #expect(StatusReport.Playback(status).latencyMs == nil)
        await harness.player.stop()
    }

    private func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
    }
}
