import DBus
@testable import SpeakerdAPI
import Testing

/// The client's sentences when speakerd cannot be reached: what composer-cli prints when D-Bus
/// activation could not start speakerd, or the bus itself is down.
@Suite("The client's sentences for a speakerd it cannot reach")
struct ClientUnreachableTests {
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

    @Test("a call speakerd received and did not answer in time says it is running but busy, not 'is the service running?'")
    func runningButBusy() {
        let error = SpeakerdDBusClient.translate(.timeout(method: "io.speakerd.Daemon1.Status", milliseconds: 30_000), bus: "system")
        #expect(error == .rejected(name: DBusError.Name.noReply, message:
            "speakerd is running but did not answer Status within 30 s (busy or stuck); its log is 'journalctl -u speakerd', "
            + "'systemctl restart speakerd' restarts it"))
        #expect(!error.description.contains("is the service running"))
        #expect(CommandErrorJSON.code(for: error) == "noReply")
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
