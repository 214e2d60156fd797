import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ComposerCLIKit
import SpeakerdAPI

/// composer-cli: talks to speakerd. The root only wires subcommands; each lives in its file.
@main
struct ComposerCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "composer-cli",
        abstract: "Plays MIDI on your Bluetooth speaker through speakerd.",
        discussion: "Every reporting command takes --json with stable keys for scripts.",
        version: SpeakerdVersion.current,
        subcommands: [
            PlayCommand.self, StopCommand.self, PauseCommand.self, ResumeCommand.self,
            StatusCommand.self, ScanCommand.self, ConnectCommand.self, DisconnectCommand.self,
            ForgetCommand.self, SpeakersCommand.self, StartupCommand.self, DoctorCommand.self,
            VolumeCommand.self, QueueCommand.self, SkipCommand.self, ClearCommand.self,
            SeekCommand.self, LoopCommand.self, TempoCommand.self, TransposeCommand.self,
            MuteCommand.self, SoloCommand.self, UnmuteCommand.self,  // live controls (LiveControlCommands.swift)
            RenderCommand.self,  // the audio engineer's offline render (RenderCommand.swift)
        ]
    )

    /// What may follow `composer-cli`: each subcommand's name and `help`.
    static var knownSubcommands: [String] {
        configuration.subcommands.map { $0._commandName } + ["help"]
    }

    /// Every failure ends as one line on stderr and a non-zero exit; help and --version
    /// still print in full (see `CommandFailure`).
    static func main() async {
        await CommandFailure.run(program: "composer-cli") {
            let arguments = Array(CommandLine.arguments.dropFirst())
            if let unknown = SubcommandSuggestion(arguments: arguments, known: knownSubcommands) {
                throw ValidationError(unknown.sentence(program: "composer-cli"))  // exit 64, as for any usage error
            }
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } outcome: { error in
            // A command that throws ExitCode has printed its outcome already: no second line.
            if let exit = error as? ExitCode, exit != .success { return .logged(exitStatus: exit.rawValue) }
            let code = exitCode(for: error)
            if code == .success { return .fullText(fullMessage(for: error)) }
            let message = (error as? SpeakerdError)?.description ?? message(for: error)
            // A script that asked for JSON gets its errors as JSON too (CommandErrorJSON).
            if CommandLine.arguments.dropFirst().contains("--json") {
                let name = (error as? SpeakerdError).map(CommandErrorJSON.code(for:)) ?? (code == .validationFailure ? "usage" : "failed")
                return .jsonFailure(code: name, message: message, exitStatus: code.rawValue)
            }
            return .failure(message: message, exitStatus: code.rawValue)
        }
    }
}
