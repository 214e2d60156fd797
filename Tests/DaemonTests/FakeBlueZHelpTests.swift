import Foundation
import Testing

/// `scripts/fake-bluez --help` is how a newcomer learns to try every command by hand: it names
/// the commands that make a world (a speaker, a phone, a speaker switched off and on) and walks
/// through a whole session in order.
@Suite("scripts/fake-bluez --help")
struct FakeBlueZHelpTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/fake-bluez").standardized.path

    @Test("--help names the world's commands and shows a session: add a speaker, scan and pick, play, switch it off and on")
    func helpShowsASession() async throws {
        let run = try await ExecutableRun.run(program: Self.script, ["--help"])
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty, "\(run.standardError)")
        let help = run.standardOutput
        for command in ["add-speaker ADDR NAME", "add-phone ADDR NAME", "speaker-off ADDR", "speaker-on ADDR"] {
            #expect(help.contains("  \(command)"), "--help does not explain \(command)")
        }
        // The session, in the order a person types it.
        let steps = ["$ scripts/fake-bluez", "add-speaker 11:22:33:44:55:66 JBL Flip 5", "export DBUS_SYSTEM_BUS_ADDRESS=",
                     "speakerd --state-dir", "composer-cli scan", "composer-cli play", "speaker-off 11:22:33:44:55:66",
                     "composer-cli status", "speaker-on 11:22:33:44:55:66", "Ctrl-D"]
        var rest = help[...]
        for step in steps {
            guard let found = rest.range(of: step) else {
                Issue.record("--help's session lacks '\(step)' (or has it out of order):\n\(help)")
                return
            }
            rest = rest[found.upperBound...]
        }
    }
}
