import DBus
@testable import ComposerCLIKit
@testable import SpeakerCore
@testable import SpeakerdAPI
import Testing

/// composer-cli's sentences that need no daemon to check: the pure parts behind `status`,
/// `play --wait` and the unknown-subcommand line.
@Suite("composer-cli messages")
struct CLIMessageTests {
    static let paused = StatusReport(
        readiness: "playbackReady", message: "Paused song.mid on JBL Flip 5",
        speaker: .init(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5", connected: true),
        playback: .init(state: "paused", file: "song.mid", positionSeconds: 72, durationSeconds: 184))

    @Test("status shows a paused song as paused, in the daemon's own sentence and the playback line")
    func pausedStatus() {
        #expect(Self.paused.humanReadable == """
            Status:    Paused song.mid on JBL Flip 5
            Readiness: playbackReady
            Speaker:   JBL Flip 5 (11:22:33:AA:BB:CC), connected
            Playback:  paused song.mid 1:12 / 3:04
            """)
        #expect(DaemonPhase.paused(file: "song.mid", speakerName: "JBL Flip 5").statusLine == Self.paused.message)
    }

    @Test("play --wait exits 0 when the song finished or was stopped, 1 when it was replaced or lost")
    func waitOutcomes() {
        let status = Self.paused
        #expect(PlaybackWaiter.Outcome.finished(status).endedAsAsked)
        #expect(PlaybackWaiter.Outcome.stopped(status).endedAsAsked)
        #expect(PlaybackWaiter.Outcome.stopped(status).sentence(for: "song.mid") == "song.mid was stopped at 1:12")
        #expect(!PlaybackWaiter.Outcome.replaced(by: "other.mid", status).endedAsAsked)
        #expect(!PlaybackWaiter.Outcome.failed(reason: "device gone", status).endedAsAsked)
        #expect(!PlaybackWaiter.Outcome.daemonRestarted(status).endedAsAsked)
    }

    static let known = ["play", "stop", "pause", "resume", "status", "scan", "connect", "disconnect", "forget",
                        "speakers", "startup", "doctor", "render", "help"]

    @Test("an unknown first word gets the nearest subcommand, when one is near", arguments: [
        ("stauts", "status"), ("conect", "connect"), ("disconect", "disconnect"), ("speaker", "speakers"),
        ("plya", "play"), ("rendr", "render"), ("frobnicate", nil), ("s", nil), ("sta", nil),
    ] as [(String, String?)])
    func suggestion(word: String, expected: String?) {
        let suggestion = SubcommandSuggestion(arguments: [word], known: Self.known)
        #expect(suggestion?.suggestion == expected)
    }

    @Test("known subcommands, options and an empty command line are left to the parser")
    func noSuggestion() {
        #expect(SubcommandSuggestion(arguments: ["status", "--json"], known: Self.known) == nil)
        #expect(SubcommandSuggestion(arguments: ["--versoin"], known: Self.known) == nil)
        #expect(SubcommandSuggestion(arguments: [], known: Self.known) == nil)
    }

    @Test("speakerd that D-Bus activation could not start gets the systemctl and journalctl hint, with the bus's reason")
    func activationFailures() {
        let hint = "start it with 'systemctl start speakerd', its log is 'journalctl -u speakerd'"
        let failures = [
            ("org.freedesktop.DBus.Error.Spawn.ChildExited", "Process org.speakerd exited with status 1"),
            ("org.freedesktop.DBus.Error.Spawn.Failed", "Failed to execute program org.speakerd: Permission denied"),
            ("org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "The name org.speakerd was not provided by any .service files"),
            ("org.freedesktop.DBus.Error.Spawn.ExecFailed", "Failed to execute program /usr/sbin/speakerd: No such file or directory"),
            ("org.freedesktop.DBus.Error.TimedOut", "Activation of org.speakerd timed out"),
        ]
        for (name, message) in failures {
            let error = SpeakerdDBusClient.translate(.remote(name: name, message: message), bus: "system")
            #expect(error == .unreachable(bus: "system", reason: "speakerd could not be started (\(name): \(message)); " + hint))
            #expect(error.description.hasPrefix("cannot reach speakerd on the system bus: speakerd could not be started ("))
        }
        for name in [DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner] {
            #expect(SpeakerdDBusClient.translate(.remote(name: name, message: "no"), bus: "system").description
                    == "cannot reach speakerd on the system bus: speakerd is not running (and could not be started); " + hint)
        }
        // speakerd's own refusals stay its own sentence.
        #expect(SpeakerdDBusClient.translate(.remote(name: "io.speakerd.Error.NotReady", message: "no speaker yet"), bus: "system")
                == .rejected(name: "io.speakerd.Error.NotReady", message: "no speaker yet"))
    }

    @Test("a bus nobody answers on is called down, with its address and what to check")
    func busDown() async {
        let address = "unix:path=/nonexistent/speakerd-test/system_bus_socket"
        let error = await #expect(throws: SpeakerdError.self) { _ = try await SpeakerdDBusClient.connect(.address(address)) }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("cannot reach speakerd on the \(address) bus: the bus is down: nothing answers at \(address) ("), "\(text)")
        #expect(text.hasSuffix("); check it with 'systemctl status dbus', then speakerd with 'systemctl start speakerd' and 'journalctl -u speakerd'"),
                "\(text)")
        #expect(SpeakerdDBusClient.busDown(at: "unix:path=/run/dbus/system_bus_socket",
                                           .connectionFailed(address: "unix:path=/run/dbus/system_bus_socket", reason: "No such file or directory"))
                .hasPrefix("the bus is down: nothing answers at unix:path=/run/dbus/system_bus_socket (No such file or directory); "))
    }
}
