import ArgumentParser
import SpeakerCore

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Looks for Bluetooth speakers nearby and lists them, best first.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let report = try await common.daemon().scan()
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
    }
}
