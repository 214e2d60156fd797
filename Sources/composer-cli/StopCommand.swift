import ArgumentParser
import ComposerCLIKit

struct StopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stops the song that is playing and clears the queue.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().stop())
    }
}
