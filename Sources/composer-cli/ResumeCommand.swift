import ArgumentParser
import ComposerCLIKit

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resumes the paused song.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().resume())
    }
}
