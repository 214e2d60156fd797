import AsyncSignals
import Foundation
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing

/// `speakerd --audio-output pulseaudio` as users run it: the real daemon finds the server the way
/// every PulseAudio client does (here through `PULSE_SERVER`), connects the known speaker on the
/// fake BlueZ, and a song sent over D-Bus must reach the speaker's sink on that server (a null
/// sink carrying a Bluetooth speaker's properties, loaded when the fake speaker's `Connected`
/// goes true, as a real server's Bluetooth module does; the server's default sink stands for the
/// box's own output).
///
/// Bounded polls: the daemon is a separate process, so its readiness and the song's end are
/// watched through its status; every wait ends as soon as its condition holds.
@Suite("speakerd --audio-output pulseaudio", .serialized)
struct PulseAudioDaemonTests {
    static let speaker = "11:22:33:AA:BB:CC"

    @Test("speakerd plays a song to PulseAudio: the speaker's sink hears a 440 Hz tone", .timeLimit(.minutes(2)))
    func daemonPlaysToPulseAudio() async throws {
        try await Self.expectA4HeardBySink()
    }

    /// speakerd (started through `launcher`, if any) plays a sustained A4 to a private server;
    /// what the speaker's sink heard is recorded and must hold a clean A4.
    static func expectA4HeardBySink(launcher: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory)
        var recording: Recording?
        try await withDaemon(followingSinkOn: server, in: directory, launcher: launcher) { client, follower in
            let sink = try #require(follower.sink, "speakerd connected the speaker but the harness loaded no sink for it")
            recording = try await server.record(to: directory.appendingPathComponent("monitor.raw").path, from: sink.monitor)
            let started = try await client.play(try request(ClientSongs.sustainedA4(seconds: 1.2), named: "a4.mid", in: directory))
            #expect(started.playback.state == "playing", sourceLocation: sourceLocation)
            try await eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
            #expect(try await client.status().playback.state == "idle", sourceLocation: sourceLocation)
        }
        let mono = try await #require(recording, sourceLocation: sourceLocation).finish()
        let tone = WAVAnalysis.a4Windows(mono)
        #expect(tone.loud > 0, "the sink heard nothing from speakerd", sourceLocation: sourceLocation)
        #expect(tone.clean > 0, "no stretch of what the sink heard is a clean A4 (\(tone.loud) loud windows)",
                sourceLocation: sourceLocation)
    }

    @Test("speakerd without a PulseAudio server says there is no sound server, rejects a play at once in one line, and stays up",
          .timeLimit(.minutes(2)))
    func daemonWithoutServerRejectsThePlay() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = "\(directory.path)/no-server/native"
        try await Self.withDaemon(pulseServer: "unix:" + socket, in: directory,
                                  until: { $0.waitingFor?.code == NotReadyReason.Code.soundServerUnreachable.rawValue && $0.speaker?.connected == true }) { client in
            let waiting = try await client.status()
            #expect(waiting.readiness == "speakerConnected", "the speaker is connected; the sound server is what is missing")
            #expect(waiting.message.hasPrefix("No sound server at \(socket)"), "\(waiting.message)")
            let error = await #expect(throws: SpeakerdError.self) {
                try await client.play(try Self.request(ClientSongs.sustainedA4(seconds: 1.2), named: "a4.mid", in: directory))
            }
            let message = error?.description ?? ""
            #expect(message.hasPrefix("cannot play a4.mid now: no sound server at \(socket)"), "\(message)")
            #expect(message.hasSuffix("is PulseAudio or PipeWire running, and may speakerd reach it?"), "\(message)")
            #expect(!message.contains("\n"))
            let after = try await client.status()
            #expect(after.speaker?.connected == true, "speakerd did not stay up")
        }
    }

    /// The state file the daemon starts with: the speaker is known (no volume remembered).
    static let knownSpeakerState = """
        {"version":1,"speakers":[{"address":"\(speaker)","name":"JBL Flip 5",\
        "firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
        """

    /// Runs speakerd (`--audio-output pulseaudio`, `PULSE_SERVER=pulseServer`) on a fake world with
    /// the known speaker present; once speakerd has it connected, runs `speakerConnected` (where the
    /// harness adds the speaker's sink); hands `body` a client once `ready` holds (by default: ready to play), then stops it
    /// with SIGTERM and expects a clean exit. A `launcher` (a program and its arguments) starts
    /// speakerd through it, e.g. under the unit's seccomp filters. `state` is written as the
    /// state file (nil keeps the one a previous run left), `config` as the config file.
    /// The speaker is python-dbusmock's stock device, or with `switchableSpeaker` fake-bluez's
    /// `add-speaker` (which `speaker-off`/`speaker-on` switch); `speakerAdded` runs once it is on
    /// the bus, before speakerd starts.
    static func withDaemon(pulseServer: String, in directory: URL, launcher: [String] = [], audioOutput: String = "pulseaudio",
                           state: String? = knownSpeakerState, config: String = "", switchableSpeaker: Bool = false,
                           world worldStarted: (FakeBusWorld) -> Void = { _ in },
                           speakerAdded: (FakeBusWorld) async throws -> Void = { _ in },
                           speakerConnected: (() async throws -> Void)? = nil,
                           until ready: @escaping (StatusReport) -> Bool = { $0.readiness == "playbackReady" },
                           _ body: (SpeakerdDBusClient) async throws -> Void) async throws {
        let world = try await FakeBusWorld.start()
        defer { _ = world }
        worldStarted(world)
        try state?.write(to: directory.appendingPathComponent("state.json"), atomically: true, encoding: .utf8)
        try config.write(to: directory.appendingPathComponent("speakerd.conf"), atomically: true, encoding: .utf8)
        let bus = try await world.connect()
        defer { bus.close() }
        _ = try await world.mock("AddAdapter", path: "/org/bluez", arguments: [.string("hci0"), .string("box")], using: bus)
        if switchableSpeaker {
            let added = try await world.send("add-speaker \(Self.speaker) JBL Flip 5")
            guard added == "ok" else { throw PulseAudioServerError("fake-bluez add-speaker said: \(added)") }
        } else {
            _ = try await world.mock("AddDevice", path: "/org/bluez",
                                     arguments: [.string("hci0"), .string(Self.speaker), .string("JBL Flip 5")], using: bus)
        }
        try await speakerAdded(world)

        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = pulseServer
        if !launcher.isEmpty, let asan = environment["ASAN_OPTIONS"] {
            // LeakSanitizer's exit scan needs ptrace, which a sandboxing launcher may refuse (see SandboxedPulseAudioTests).
            environment["ASAN_OPTIONS"] = asan + ":detect_leaks=0"
        }
        let speakerd = Self.productsDirectory.appendingPathComponent("speakerd").path
        let daemon = try SpawnedProcess.spawn(launcher.first ?? speakerd, Array(launcher.dropFirst()) + (launcher.isEmpty ? [] : [speakerd]) + [
            "--config", directory.appendingPathComponent("speakerd.conf").path, "--state-dir", directory.path,
            "--bus", world.address, "--audio-output", audioOutput, "--soundfont", "/usr/share/sounds/sf2/TimGM6mb.sf2",
        ], environment: environment, standardError: .file(directory.appendingPathComponent("speakerd.log").path))
        var running = true
        defer { if running { daemon.signal(SIGKILL) } }

        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
        if let speakerConnected {
            try await Self.eventually("speakerd has the speaker connected") { (try? await client.status())?.speaker?.connected == true }
            try await speakerConnected()
        }
        do {
            try await Self.eventually("speakerd is ready to play") { (try? await client.status()).map(ready) ?? false }
            try await body(client)
        } catch {
            // A scenario that fails on a loaded machine is diagnosed from what speakerd said.
            Issue.record("speakerd's log, to the failure:\n\(Self.tail(of: directory.appendingPathComponent("speakerd.log")))")
            throw error
        }
        daemon.signal(SIGTERM)
        #expect(await daemon.exitStatus() == 0, "speakerd did not stop cleanly on SIGTERM")
        running = false
    }

    /// `withDaemon` with the speaker's sink following its Bluetooth connection, as a real sound
    /// server's Bluetooth module does: loaded on `server` whenever the fake device is connected,
    /// unloaded whenever it is not (`BluetoothSinkFollower`). `body` gets the follower as well.
    static func withDaemon(followingSinkOn server: PulseAudioServer, in directory: URL, launcher: [String] = [],
                           audioOutput: String = "pulseaudio", config: String = "", switchableSpeaker: Bool = false,
                           world worldStarted: (FakeBusWorld) -> Void = { _ in },
                           until ready: @escaping (StatusReport) -> Bool = { $0.readiness == "playbackReady" },
                           _ body: (SpeakerdDBusClient, BluetoothSinkFollower) async throws -> Void) async throws {
        var follower: BluetoothSinkFollower?
        do {
            try await withDaemon(pulseServer: server.address, in: directory, launcher: launcher, audioOutput: audioOutput,
                                 config: config, switchableSpeaker: switchableSpeaker, world: worldStarted,
                                 speakerAdded: { follower = try await BluetoothSinkFollower.follow(Self.speaker, on: $0, loadingOn: server) },
                                 until: ready) { client in
                let follower = try #require(follower)
                // speakerd can see the sink before the harness's own pactl calls return.
                try await eventually("the harness has loaded or unloaded the speaker's sink") { !follower.isChanging }
                try await body(client, follower)
                #expect(follower.failure == nil, "the harness could not follow the speaker's connection: \(follower.failure ?? "")")
            }
        } catch {
            await follower?.stop()
            throw error
        }
        await follower?.stop()
    }

    /// The last `lines` lines of a log, or why there are none.
    static func tail(of file: URL, lines: Int = 40) -> String {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return "(no log at \(file.path))" }
        return text.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines).joined(separator: "\n")
    }

    /// Waits until the song has played `seconds`, by speakerd's status. A song that stops playing
    /// first (it failed, it ended) fails the wait at once with what the status said, and a timeout
    /// says the last status seen: "never got there" has more than one cause.
    static func untilPlayed(_ seconds: Double, by client: SpeakerdDBusClient, within limit: Duration = .seconds(30)) async throws {
        var last: StatusReport.Playback?
        do {
            try await eventually("\(seconds) s of the song has played", within: limit) {
                let playback = try await client.status().playback
                last = playback
                guard ["playing", "waiting"].contains(playback.state) else {
                    throw PulseAudioServerError("the song is \(describe(playback)) before \(seconds) s of it played")
                }
                return playback.positionSeconds ?? 0 >= seconds
            }
        } catch let timeout as TimedOut {
            throw PulseAudioServerError("\(timeout): \(last.map(describe) ?? "no status")")
        }
    }

    private static func describe(_ playback: StatusReport.Playback) -> String {
        "\(playback.state) at \(playback.positionSeconds.map { "\($0) s" } ?? "no position")"
            + (playback.latencyMs.map { ", latency \($0) ms" } ?? "") + (playback.error.map { ": \($0)" } ?? "")
    }

    /// A song file in `directory`, opened as composer-cli would.
    static func request(_ bytes: [UInt8], named name: String, in directory: URL) throws -> PlayRequest {
        let path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return PlayRequest(file: try FileDescriptor.open(FilePath(path), .readOnly), displayName: name, queue: false)
    }

    /// TestSupport's `eventually` for a real daemon and a real sound server on a loaded machine:
    /// bounded at 30 s by default, and checking every 50 ms (many checks start a `pactl`).
    static func eventually(_ what: String, within limit: Duration = .seconds(30),
                           _ condition: () async throws -> Bool) async throws {
        try await TestSupport.eventually(what, within: limit, every: .milliseconds(50), condition)
    }

    /// `.build/<config>/`, where SwiftPM puts the executables next to the test bundle.
    static var productsDirectory: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("speakerd").path) { return url }
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../.build/debug").standardized
    }
}
