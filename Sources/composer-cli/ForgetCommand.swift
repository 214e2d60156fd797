import ArgumentParser
import SpeakerCore

struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Removes a speaker from the known speakers, so start-up no longer tries it.")

    @Argument(help: "The speaker's Bluetooth address, such as 11:22:33:AA:BB:CC.")
    var address: String

    @OptionGroup var common: CommonOptions

    func validate() throws { _ = try validateAddress(address) }

    func run() async throws {
        let report = try await common.daemon().forget(try validateAddress(address))
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
    }
}
