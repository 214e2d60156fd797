@testable import SpeakerdAPI
import Testing

/// The one stderr line both executables end a failure with (`CommandFailure`).
@Suite("One-line failures of speakerd and composer-cli")
struct CommandFailureTests {
    @Test("only the first line of a message is kept, without ArgumentParser's 'Error: ' prefix")
    func firstLineWithoutPrefix() {
        let line = CommandFailure.line(program: "composer-cli",
                                       message: "Error: Missing expected argument '<file>'\nHelp:  <file>  The song.\nUsage: …",
                                       exitStatus: 64)
        #expect(line == "composer-cli: Missing expected argument '<file>'")
    }

    @Test("a message that starts with blank lines still yields its first real line")
    func leadingBlankLines() {
        #expect(CommandFailure.line(program: "speakerd", message: "\n\nconfig.conf:3: unknown key 'x'", exitStatus: 78)
                == "speakerd: config.conf:3: unknown key 'x'")
    }

    @Test("an empty message says the command failed and with which exit status")
    func emptyMessage() {
        #expect(CommandFailure.line(program: "speakerd", message: "", exitStatus: 1) == "speakerd: failed (exit status 1)")
        #expect(CommandFailure.line(program: "composer-cli", message: "Error: ", exitStatus: 2)
                == "composer-cli: failed (exit status 2)")
    }

    @Test("a message of only spaces, tabs or no-break spaces counts as empty; other text is kept as it is")
    func blankMessage() {
        #expect(CommandFailure.line(program: "speakerd", message: " \t\u{00A0}\u{2003}", exitStatus: 75)
                == "speakerd: failed (exit status 75)")
        #expect(CommandFailure.line(program: "speakerd", message: "  two spaces first", exitStatus: 1)
                == "speakerd:   two spaces first")
    }
}
