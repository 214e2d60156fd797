import AsyncSignals
@testable import DBus
import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// `speakerd --audio-output pulseaudio` waits for the speaker's own sink and plays to it: a
/// private PulseAudio server whose default sink (`out`) stands for the box's built-in output, and
/// a null sink carrying a Bluetooth speaker's properties standing for the speaker's A2DP sink:
/// loaded and unloaded with the speaker's connection (`withDaemon(followingSinkOn:)`), or by the
/// test where a sink comes or goes while the speaker stays connected.
@Suite("speakerd plays to the speaker's own sink on PulseAudio and on PipeWire", .serialized)
struct PulseAudioSinkDaemonTests {
    static let speaker = PulseAudioDaemonTests.speaker

    @Test("a play waits while the speaker has no sink (no stream anywhere, status names the missing sink), then plays on the speaker's sink, not the default",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func playWaitsForTheSpeakersSink(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var recording: Recording?
        var builtIn: Recording?
        try await PulseAudioDaemonTests.withDaemon(
            pulseServer: server.address, in: directory,
            until: { $0.speaker?.connected == true && $0.waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue }
        ) { client in
            let waiting = try await client.status()
            #expect(waiting.readiness == "speakerConnected")
            #expect(waiting.waitingFor?.message.contains("no Bluetooth sink for it on the sound server yet") == true,
                    "\(String(describing: waiting.waitingFor))")
            #expect(waiting.audioPath == nil)
            builtIn = try await server.record(to: directory.appendingPathComponent("default.raw").path)

            // Six seconds: the latency must be seen while the song plays, and under AddressSanitizer
            // on a busy machine a 3 s song once ended before the status had shown it (CI).
            let request = try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 6), named: "a4.mid", in: directory)
            let play = Task { try await client.play(request) }
            defer { play.cancel() }
            try await PulseAudioDaemonTests.eventually("the play request waits") {
                try await client.status().playback.state == "waiting"
            }
            #expect(try await server.sinkInputSinks().isEmpty, "a stream was opened before the speaker's sink existed")
            #expect(try await client.status().waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue)

            // At 48 kHz, as PipeWire makes a speaker's sink: the song's stream comes at that rate,
            // so the server has nothing to resample.
            let sink = try await server.addBluetoothSink(address: Self.speaker, rate: 48_000)
            recording = try await server.record(to: directory.appendingPathComponent("speaker.raw").path, from: sink.monitor)
            let started = try await play.value
            #expect(started.playback.state == "playing")
            #expect(try await server.sinkInputRates() == [48_000], "the song's stream is not at its sink's rate")
            let defaultSink = try #require(try await server.sinks()["out"])
            let streams = try await server.sinkInputSinks()
            #expect(streams == [sink.index],
                    "the song's stream is not (only) on the speaker's sink \(sink.index) but on \(streams); the default is \(defaultSink)")
            let status = try await client.status()
            #expect(status.audioPath == "PulseAudio sink \(sink.name)")
            #expect(ReportJSON.encode(status).contains("\"audioPath\" : \"PulseAudio sink \(sink.name)\""))
            #expect(status.humanReadable.contains("Audio:     PulseAudio sink \(sink.name) at 48 kHz"), "\(status.humanReadable)")
            #expect(status.audioSampleRateHz == 48_000, "status does not say the rate the song renders at")
            // The position is the heard one: the status says how far the speaker is behind, as the
            // server's timing for the stream has it (at least a period, not seconds).
            try await PulseAudioDaemonTests.eventually("the status says the stream's latency") {
                try await client.status().playback.latencyMs != nil
            }
            let timed = try await client.status()
            let latency = try #require(timed.playback.latencyMs)
            #expect(latency >= 11 && latency < 3000, "latency \(latency) ms")
            #expect(timed.humanReadable.contains("(latency \(latency) ms)"), "\(timed.humanReadable)")
            #expect(ReportJSON.encode(timed).contains("\"latencyMs\" : \(latency)"))
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
        }
        let mono = try await #require(recording).finish()
        let tone = WAVAnalysis.a4Windows(mono)
        #expect(tone.loud > 0, "the speaker's sink heard nothing")
        #expect(tone.clean > 0, "no stretch of what the speaker's sink heard is a clean A4 (\(tone.loud) loud windows)")
        let leaked = WAVAnalysis.a4Windows(try await #require(builtIn).finish())
        #expect(leaked.loud == 0, "the box's own output (the default sink) heard \(leaked.loud) loud windows of the song")
    }

    /// With `keep_alive` the paused song's stream carries the -60 dBFS signal: a stream the server
    /// had moved to its default sink would be heard there.
    @Test("the speaker's sink vanishing mid-song pauses the song and drops readiness with the reason; its stream ends with the sink (none on any sink, the default sink hears nothing, keep_alive or not); its return resumes the song on that sink",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases, [false, true])
    func sinkLossPausesAndReturnResumes(kind: SoundServerKind, keepAlive: Bool) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var sink: BluetoothSink?
        var recording: Recording?
        var whileGone: [Float] = []
        try await PulseAudioDaemonTests.withDaemon(pulseServer: server.address, in: directory,
                                                   config: keepAlive ? "keep_alive = yes\n" : "", speakerConnected: {
            sink = try await server.addBluetoothSink(address: Self.speaker)
        }) { client in
            let first = try #require(sink)
            let started = try await client.play(
                try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 20), named: "long.mid", in: directory))
            #expect(started.playback.state == "playing")
            #expect(try await server.sinkInputSinks() == [first.index])

            try await server.remove(first)
            try await PulseAudioDaemonTests.eventually("the song pauses") { try await client.status().playback.state == "paused" }
            let lost = try await client.status()
            #expect(lost.readiness == "speakerConnected", "readiness did not drop with the sink")
            #expect(lost.waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue)
            #expect(lost.waitingFor?.message.contains("no Bluetooth sink for it") == true, "\(String(describing: lost.waitingFor))")
            let position = try #require(lost.playback.positionSeconds)
            // The server ended the song's stream with its sink instead of moving it to the default
            // sink (the box's own output): nothing of speakerd's plays anywhere while it is gone.
            let streamsWhileGone = try await server.sinkInputSinks()
            #expect(streamsWhileGone.isEmpty, "while the speaker's sink is gone a stream of speakerd's is on sink(s) \(streamsWhileGone)")
            let builtIn = try await server.record(to: directory.appendingPathComponent("default.raw").path)
            try await Task.sleep(for: .seconds(2.5)) // More than one 2 s block of the idle default sink.
            #expect(try await server.sinkInputSinks().isEmpty, "a stream of speakerd's appeared while the speaker's sink was gone")
            whileGone = try await builtIn.finish()

            let back = try await server.addBluetoothSink(address: Self.speaker)
            recording = try await server.record(to: directory.appendingPathComponent("back.raw").path, from: back.monitor)
            try await PulseAudioDaemonTests.eventually("the song resumes") { try await client.status().playback.state == "playing" }
            try await PulseAudioDaemonTests.eventually("the song's stream is on the speaker's sink again") {
                try await server.sinkInputSinks() == [back.index]
            }
            // A new null sink renders its first 2 s block before it takes the stream's audio (a
            // Bluetooth sink has no such block): the song goes on once the sink hears it.
            _ = try await #require(recording).firstSoundArrival()
            try await Task.sleep(for: .seconds(1.5))
            let resumed = try await client.status()
            #expect(resumed.readiness == "playbackReady")
            #expect((resumed.playback.positionSeconds ?? 0) > position, "the song did not go on from where it paused")
            _ = try await client.stop()
        }
        let mono = try await #require(recording).finish()
        let tone = WAVAnalysis.a4Windows(mono)
        #expect(tone.clean > 0, "after its return the speaker's sink heard no clean A4 (\(tone.loud) loud windows)")
        // Digital silence: no song, and no keep-alive signal (-60 dBFS) either.
        #expect(whileGone.count > 44_100 / 2, "the default sink's monitor recorded \(whileGone.count) samples in 2.5 s")
        let peak = WAVAnalysis.peak(whileGone[...])
        #expect(peak == 0, "the default sink (the box's own output) heard a peak of \(peak) while the speaker's sink was gone")
    }

    /// The user paused; the speaker went away and came back, and its sink is a new one (the old
    /// one, and the paused song's stream with it, are gone). The song stays paused as asked, and
    /// the user's `resume` plays it on the new sink from where it paused, not on a dead stream.
    @Test("a song the user paused stays paused while the speaker's sink goes and comes back as a new one; resume plays it on the new sink from where it paused",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func userPausedSongResumesOnTheReturnedSink(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var sink: BluetoothSink?
        var recording: Recording?
        try await PulseAudioDaemonTests.withDaemon(pulseServer: server.address, in: directory, speakerConnected: {
            sink = try await server.addBluetoothSink(address: Self.speaker)
        }) { client in
            let first = try #require(sink)
            _ = try await client.play(
                try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 20), named: "long.mid", in: directory))
            #expect(try await server.sinkInputSinks() == [first.index])
            try await Task.sleep(for: .seconds(1))
            let paused = try await client.pause()
            #expect(paused.playback.state == "paused")
            let position = try #require(paused.playback.positionSeconds)

            try await server.remove(first)
            try await PulseAudioDaemonTests.eventually("readiness drops with the sink") {
                try await client.status().readiness == "speakerConnected"
            }
            #expect(try await client.status().playback.state == "paused", "the user's pause was not kept while the speaker was away")
            let back = try await server.addBluetoothSink(address: Self.speaker)
            try await PulseAudioDaemonTests.eventually("ready again on the speaker's new sink") {
                try await client.status().readiness == "playbackReady"
            }
            #expect(try await client.status().playback.state == "paused", "the song resumed by itself although the user had paused it")

            recording = try await server.record(to: directory.appendingPathComponent("back.raw").path, from: back.monitor)
            let resumed = try await client.resume()
            #expect(resumed.playback.state == "playing")
            try await PulseAudioDaemonTests.eventually("the song's stream is on the speaker's new sink") {
                try await server.sinkInputSinks() == [back.index]
            }
            _ = try await #require(recording).firstSoundArrival()
            try await Task.sleep(for: .seconds(1.5))
            let playing = try await client.status()
            #expect(playing.playback.state == "playing", "\(playing.playback)")
            #expect((playing.playback.positionSeconds ?? 0) > position, "the song did not go on from where it paused")
            _ = try await client.stop()
        }
        let tone = WAVAnalysis.a4Windows(try await #require(recording).finish())
        #expect(tone.clean > 0, "after the user's resume the speaker's new sink heard no clean A4 (\(tone.loud) loud windows)")
    }

    @Test("the song's first note reaches the speaker's sink the pre-roll (150 ms by default) after the play request, not sooner",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func firstNoteAfterThePreRoll(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var recording: Recording?
        var delay = Duration.zero
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory) { client, follower in
            let speaker = try #require(follower.sink)
            recording = try await server.record(to: directory.appendingPathComponent("speaker.raw").path, from: speaker.monitor)
            #expect(try await server.sinkInputSinks().isEmpty, "keep_alive is off by default: no stream while idle")
            // An idle null sink renders in 2 s blocks; parec's 20 ms latency applies from the end
            // of the block under way, and only then does audio reach the file as it plays.
            try await Task.sleep(for: .milliseconds(2500))
            let request = try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 1), named: "a4.mid", in: directory)
            let listening = recording!
            let arrival = Task { try await listening.firstSoundArrival() }
            let requested = ContinuousClock.now
            _ = try await client.play(request)
            delay = try await arrival.value - requested
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
        }
        _ = try await #require(recording).finish()
        // The sound reaches the file after it was played, so this bound needs no tolerance: the
        // first note cannot sound before the stream opened (after the request) plus the pre-roll.
        // (With pre_roll_ms = 0 it came 9-23 ms after the request here.) The upper bound only
        // catches a pre-roll played twice or a stuck stream, not a loaded machine.
        #expect(delay >= .milliseconds(150), "the first note came \(delay) after the request: the pre-roll is missing")
        #expect(delay < .milliseconds(1650), "the first note came \(delay) after the request")
    }

    @Test("keep_alive = yes: the idle speaker's sink hears the -60 dBFS signal, not digital silence; a song replaces it, and it goes on while the song is paused",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func keepAliveReachesTheSink(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var idle: [Float] = []
        var paused: [Float] = []
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory, config: "keep_alive = yes\n") { client, follower in
            let speaker = try #require(follower.sink)
            try await PulseAudioDaemonTests.eventually("the keep-alive stream is on the speaker's sink") {
                try await server.sinkInputSinks() == [speaker.index]
            }
            let recording = try await server.record(to: directory.appendingPathComponent("idle.raw").path, from: speaker.monitor)
            try await Task.sleep(for: .seconds(6)) // More than one 5 s period: at least one whole burst.
            idle = try await recording.finish()
            #expect(try await client.status().playback.state == "idle")

            _ = try await client.play(try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 20), named: "a4.mid", in: directory))
            #expect(try await server.sinkInputSinks() == [speaker.index], "the song's stream did not replace the keep-alive's")
            _ = try await client.pause()
            // What the stream already held of the song (~186 ms) still plays after the pause: the
            // paused sink is judged from when that has drained.
            try await Task.sleep(for: .milliseconds(500))
            let pausedRecording = try await server.record(to: directory.appendingPathComponent("paused.raw").path, from: speaker.monitor)
            try await Task.sleep(for: .seconds(6))
            paused = try await pausedRecording.finish()
            #expect(try await client.status().playback.state == "paused")
            _ = try await client.stop()
        }
        for (what, heard) in [("idle", idle), ("paused", paused)] {
            let peak = WAVAnalysis.peak(heard[...])
            #expect(peak > 0.0005 && peak < 0.002, "\(what): peak \(peak), expected about -60 dBFS")
            #expect(heard.filter { $0 != 0 }.count > 44_100 / 2, "\(what): less than half a second of non-zero signal in 6 s")
        }
    }

    @Test("keep_alive = tone in speakerd's config: the idle speaker's sink hears a steady 30 Hz tone at 1.2 % of full scale",
          .timeLimit(.minutes(2)))
    func keepAliveToneReachesTheSink() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: .pulseAudio)
        var heard: [Float] = []
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory, config: "keep_alive = tone\n") { client, follower in
            let speaker = try #require(follower.sink)
            try await PulseAudioDaemonTests.eventually("the keep-alive stream is on the speaker's sink") {
                try await server.sinkInputSinks() == [speaker.index]
            }
            try await Task.sleep(for: .milliseconds(500))  // past the stream's first buffer
            let recording = try await server.record(to: directory.appendingPathComponent("tone.raw").path, from: speaker.monitor)
            try await Task.sleep(for: .seconds(4))  // parec takes a moment to start: at least 2 s recorded
            heard = try await recording.finish()
            #expect(try await client.status().playback.state == "idle")
        }
        let second = 44_100
        #expect(heard.count >= 2 * second, "\(heard.count) frames recorded")
        let whole = heard[0..<(heard.count / second * second)]
        let level = WAVAnalysis.peak(whole)
        #expect(level > 0.0105 && level < 0.0135, "peak \(level), expected 0.012 (1.2 % of full scale)")
        for start in stride(from: 0, to: whole.count, by: second) {
            #expect(WAVAnalysis.peak(whole[start..<(start + second)]) > 0.0105, "a quiet second at \(start / second) s: steady, not bursts")
        }
        // The tone's pitch is where its spectrum peaks: a gap the sound server filled with
        // silence (a starved machine) moves no peak, where it adds zero crossings.
        let spectrum = stride(from: 10.0, through: 100.0, by: 1.0).map { ($0, WAVAnalysis.energy(at: $0, in: whole, sampleRate: second)) }
        let strongest = spectrum.max { $0.1 < $1.1 }?.0
        #expect(strongest == 30, "the spectrum peaks at \(String(describing: strongest)) Hz, expected 30 Hz")
        let at30 = WAVAnalysis.energy(at: 30, in: whole, sampleRate: second)
        #expect(at30 > 100 * WAVAnalysis.energy(at: 60, in: whole, sampleRate: second), "not 30 Hz")
    }

    @Test("audio_output = auto on a box with no BlueALSA plays through the sound server to the speaker's sink and says why it chose it",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func automaticChoosesTheSoundServer(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var recording: Recording?
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory, audioOutput: "auto") { client, follower in
            let speakerSink = try #require(follower.sink)
            let ready = try await client.status()
            #expect(ready.outputChoice == "PulseAudio/PipeWire (BlueALSA is not on the system bus; a sound server answers at \(server.address) (PULSE_SERVER))")
            #expect(ready.audioPath == "PulseAudio sink \(speakerSink.name)")
            #expect(ready.humanReadable.contains("Output:    auto chose PulseAudio/PipeWire (BlueALSA is not on the system bus"))
            #expect(ReportJSON.encode(ready).contains("\"outputChoice\" : \"PulseAudio"), "\(ReportJSON.encode(ready))")
            let startup = try await client.startup()
            #expect(startup.outputChoice == ready.outputChoice, "startup does not say what auto chose")
            #expect(startup.humanReadable.hasSuffix("Output: auto chose \(try #require(ready.outputChoice))"))

            recording = try await server.record(to: directory.appendingPathComponent("auto.raw").path, from: speakerSink.monitor)
            let started = try await client.play(
                try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 3), named: "a4.mid", in: directory))
            #expect(started.playback.state == "playing")
            #expect(try await server.sinkInputSinks() == [speakerSink.index], "the song's stream is not on the speaker's sink")
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
        }
        let tone = WAVAnalysis.a4Windows(try await #require(recording).finish())
        #expect(tone.clean > 0, "the speaker's sink heard no clean A4 under audio_output = auto (\(tone.loud) loud windows)")
    }

    @Test("connected but no sink: after audio_device_grace_seconds speakerd asks BlueZ once for the A2DP profile (never a disconnect), and the sink that follows plays the song",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func noSinkAsksForTheProfileOnce(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var fakeBlueZ: FakeBusWorld?
        var recording: Recording?
        try await PulseAudioDaemonTests.withDaemon(
            pulseServer: server.address, in: directory, config: "audio_device_grace_seconds = 1\n", world: { fakeBlueZ = $0 },
            until: { $0.speaker?.connected == true && $0.waitingFor?.code == NotReadyReason.Code.noAudioDevice.rawValue }
        ) { client in
            let world = try #require(fakeBlueZ)
            let bus = try await world.connect()
            defer { bus.close() }
            let device: DBusObjectPath = "/org/bluez/hci0/dev_11_22_33_AA_BB_CC"
            func calls(_ method: String) async throws -> [DBusValue] {
                let reply = try await world.mock("GetMethodCalls", interface: "org.freedesktop.DBus.Mock", path: device,
                                                 arguments: [.string(method)], using: bus)
                guard case .array(_, let entries)? = reply.first else { return [] }
                return entries
            }
            try await PulseAudioDaemonTests.eventually("speakerd asks BlueZ for the A2DP profile") {
                try await calls("ConnectProfile").count == 1
            }
            let asked = try await calls("ConnectProfile")
            #expect("\(asked)".contains("0000110b-0000-1000-8000-00805f9b34fb"), "\(asked)")
            #expect(try await client.status().warnings.contains { $0.contains("A2DP") }, "status does not say what speakerd asked")
            // Several grace periods later: still one ask, and the speaker was never disconnected.
            try await Task.sleep(for: .seconds(3))
            #expect(try await calls("ConnectProfile").count == 1, "speakerd asked for the profile more than once")
            #expect(try await calls("Disconnect").isEmpty, "speakerd disconnected a speaker that had no sink")

            let sink = try await server.addBluetoothSink(address: Self.speaker)
            recording = try await server.record(to: directory.appendingPathComponent("nudged.raw").path, from: sink.monitor)
            try await PulseAudioDaemonTests.eventually("ready once the sink is there") { try await client.status().readiness == "playbackReady" }
            _ = try await client.play(try PulseAudioDaemonTests.request(ClientSongs.sustainedA4(seconds: 2), named: "a4.mid", in: directory))
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
        }
        let tone = WAVAnalysis.a4Windows(try await #require(recording).finish())
        #expect(tone.clean > 0, "the speaker's sink heard no clean A4 after the profile was asked for")
    }
}
