import ArgumentParser
import ComposerCLIKit

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pauses the song that is playing.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().pause())
    }
}
