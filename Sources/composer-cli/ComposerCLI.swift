import ArgumentParser
import Foundation
import SpeakerCore

/// composer-cli: talks to speakerd. The root only wires subcommands; each lives in its file.
@main
struct ComposerCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "composer-cli",
        abstract: "Plays MIDI on your Bluetooth speaker through speakerd.",
        discussion: "Every reporting command takes --json with stable keys for scripts.",
        version: SpeakerCore.version,
        subcommands: [
            PlayCommand.self, StopCommand.self, PauseCommand.self, ResumeCommand.self,
            StatusCommand.self, ScanCommand.self, ConnectCommand.self, DisconnectCommand.self,
            ForgetCommand.self, SpeakersCommand.self, StartupCommand.self, DoctorCommand.self,
            RenderCommand.self,  // the audio engineer's offline render (RenderCommand.swift)
        ]
    )

    /// Every failure ends as one line on stderr and a non-zero exit; help and --version
    /// still print in full. ArgumentParser's default would add usage lines to each error.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
            } else {
                var message = (error as? SpeakerdError)?.description ?? message(for: error)
                if message.isEmpty { message = "failed (exit status \(code.rawValue))" }
                FileHandle.standardError.write(Data("composer-cli: \(oneLine(message))\n".utf8))
            }
            Foundation.exit(code.rawValue)
        }
    }

    private static func oneLine(_ text: String) -> String {
        let firstLine = text.split(separator: "\n").first.map(String.init) ?? text
        return firstLine.hasPrefix("Error: ") ? String(firstLine.dropFirst(7)) : firstLine
    }
}
