import ArgumentParser
import ComposerCLIKit

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Shows how far speakerd is, which speaker it uses and what is playing.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().status())
    }
}
