import ArgumentParser
import ComposerCLIKit
import SpeakerdAPI

struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Removes a speaker from the known speakers and its Bluetooth pairing.",
        discussion: """
            Start-up no longer tries it, and BlueZ forgets the pairing too: to use the speaker \
            again, put it in pairing mode and run 'composer-cli scan'. With --keep-pairing only \
            speakerd forgets it.
            """)

    @Argument(help: "The speaker's Bluetooth address, such as 11:22:33:AA:BB:CC.")
    var address: String

    @Flag(name: .customLong("keep-pairing"), help: "Keeps BlueZ's pairing: only speakerd forgets the speaker.")
    var keepPairing = false

    @OptionGroup var common: CommonOptions

    func validate() throws { _ = try validateAddress(address) }

    func run() async throws {
        let target = try validateAddress(address)
        let report = try await common.daemon().forget(target, keepPairing: keepPairing)
        let what = keepPairing ? "Forgot \(target); its Bluetooth pairing is kept."
            : "Forgot \(target) and removed its Bluetooth pairing (pair it again to use it)."
        common.show(json: ReportJSON.encode(report), human: what + "\n" + report.humanReadable)
    }
}
