import Foundation
import Glibc
@testable import Daemon
@testable import SpeakerdAPI
import SystemPackage
import TestSupport
import Testing
@testable import Configuration

/// The daemon's side of hostile clients (the exported object's bounds are SpeakerdAPITests'
/// HostileClientTests): a request whose client left never plays later, and the bounds come
/// from the config file.
@Suite("Hostile clients against the daemon: a departed client's song never plays later", .serialized)
struct HostileClientDaemonTests {
    @Test("a play waiting for the speaker is dropped when its client leaves, and never starts once the speaker is ready")
    func departedClientsPlayNeverStartsLater() async throws {
        let fake = try await DaemonWorld.start(bluez: false)
        fake.remember([DaemonWorld.flip])
        let songPath = fake.state.path + "/short.mid"
        try Data(DaemonIntegrationTests.shortSong).write(to: URL(fileURLWithPath: songPath))
        let daemon = fake.makeDaemon(playback: true) { $0.playTimeout = .seconds(3600) }
        await daemon.start()
        let observer = try await fake.client()

        let leaving = try await fake.world.connect()
        let file = try FileDescriptor.open(songPath, .readOnly)
        defer { try? file.close() }
        let call = Task { try? await rawPlay(leaving, fd: file.rawValue, name: "short.mid", timeout: .seconds(3600)) }
        try await eventually("the play waits for the speaker") { try await observer.status().playback.state == "waiting" }
        leaving.close()  // Ctrl-C on `composer-cli play --wait`
        try await eventually("the play is no longer waiting") { try await observer.status().playback.state != "waiting" }

        // bluetoothd and the speaker appear: speakerd gets ready, and the dropped song stays dropped.
        try await fake.world.startBlueZ()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        try await eventually("speakerd is ready to play", within: .seconds(30)) { daemon.gate.isReached(.playbackReady) }
        try await Task.sleep(for: .milliseconds(500))
        let after = try await observer.status()
        #expect(after.playback.state != "playing" && after.playback.state != "waiting", "\(after.playback)")
        call.cancel()
        await daemon.shutdown()
        _ = fake
    }
}

@Suite("Request limits in the config file")
struct RequestLimitsConfigurationTests {
    let parser = ConfigFileParser(path: "/etc/speakerd/speakerd.conf")

    @Test("the bounds on pending requests are read from the file, 16 and 128 when left out")
    func limitsAreRead() throws {
        #expect(try parser.parse("").requestLimits == SpeakerdRequestLimits(perClient: 16, total: 128))
        let configuration = try parser.parse("max_requests_per_client = 4\nmax_requests_total = 32\n")
        #expect(configuration.requestLimits == SpeakerdRequestLimits(perClient: 4, total: 32))
    }

    @Test("a bound of 0, past 256 or not a number is refused with file:line", arguments: [
        "max_requests_per_client = 0", "max_requests_total = 257", "max_requests_total = lots",
    ])
    func badLimits(_ line: String) {
        let error = #expect(throws: ConfigurationError.self) { try parser.parse(line) }
        #expect(error?.description.hasPrefix("/etc/speakerd/speakerd.conf:1: ") == true)
        #expect(error?.description.contains("a whole number from 1 to 256") == true)
    }
}

/// `composer-cli play` checks what it opened before it asks speakerd: what can never be a song
/// fails at once on the client, with the file's kind, even with no daemon at all.
@Suite("composer-cli play refuses what can never be a song", .serialized)
struct PlayCommandFileKindTests {
    @Test("play DIR, play /dev/null and play FIFO fail at once with one line naming the kind", arguments: [
        ("dir", "a directory"), ("/dev/null", "a character device"), ("fifo", "a named pipe (FIFO)"),
    ])
    func refused(_ target: String, _ kind: String) async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/dir", withIntermediateDirectories: false)
        #expect(mkfifo(directory.path + "/fifo", 0o600) == 0)
        let path = target.hasPrefix("/") ? target : directory.path + "/" + target
        // What "at once" costs on this machine now (a sanitizer build on a loaded machine takes
        // seconds just to start): composer-cli refusing a file that does not exist.
        let baselineStart = ContinuousClock.now
        let missing = try await ExecutableRun.run("composer-cli", ["play", directory.path + "/missing.mid",
                                                                   "--bus", "unix:path=\(directory.path)/no-bus"])
        let baseline = ContinuousClock.now - baselineStart
        #expect(missing.status != 0)
        let started = ContinuousClock.now
        // No daemon on this bus: an answer naming the file's kind comes from composer-cli alone.
        let run = try await ExecutableRun.run("composer-cli", ["play", path, "--bus", "unix:path=\(directory.path)/no-bus"])
        // At once: as quick as that refusal give or take 5 s, where a descriptor that never
        // finishes used to be waited for 10 s.
        let took = ContinuousClock.now - started
        #expect(took < baseline + .seconds(5), "took \(took); refusing a missing file took \(baseline)")
        #expect(run.status != 0)
        #expect(run.standardError == "composer-cli: \(path) is \(kind), not a MIDI file\n", "\(run.standardError)")
    }
}
