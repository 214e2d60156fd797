import ArgumentParser
import SpeakerCore

struct StartupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "Shows the last start-up's timeline: each operation, when it ran and how it ended.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let report = try await common.daemon().startup()
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
    }
}
