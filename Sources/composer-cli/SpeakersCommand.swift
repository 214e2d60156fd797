import ArgumentParser
import ComposerCLIKit
import SpeakerdAPI

struct SpeakersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speakers",
        abstract: "Lists the speakers speakerd knows, last connected first.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let report = try await common.daemon().speakers()
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
    }
}
