import ArgumentParser
import SpeakerCore

/// The root command only wires subcommands together; each lives in its own file.
struct ComposerCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "composer-cli",
        abstract: "Control speakerd and render MIDI files.",
        version: SpeakerCore.version,
        subcommands: [RenderCommand.self]
    )
}

extension AsyncParsableCommand {
    /// Names the async `run()` unambiguously: on an existential, `run()` picks the synchronous
    /// requirement (whose default prints help).
    mutating func runAsynchronously() async throws {
        try await run()
    }
}

// `AsyncParsableCommand.main()` cannot be called from top-level code (it resolves to the
// synchronous overload), so this is its body: parse, run async, exit with the right status.
do {
    var command = try ComposerCLI.parseAsRoot()
    if var command = command as? any AsyncParsableCommand {
        try await command.runAsynchronously()
    } else {
        try command.run()
    }
} catch {
    ComposerCLI.exit(withError: error)
}
