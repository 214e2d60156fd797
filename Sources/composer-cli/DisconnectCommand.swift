import ArgumentParser
import ComposerCLIKit

struct DisconnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disconnect",
        abstract: "Disconnects the speaker and keeps it disconnected until you connect again.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().disconnect())
    }
}
