import ArgumentParser
import ComposerCLIKit

struct ConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connects a speaker and makes it the one speakerd keeps connected.",
        discussion: "Without an address, reconnects the last known speaker.")

    @Argument(help: "The speaker's Bluetooth address, such as 11:22:33:AA:BB:CC.")
    var address: String?

    @Flag(help: "Connects the device even if BlueZ shows it is not a speaker (a phone, a keyboard).")
    var force = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let address { _ = try validateAddress(address) }
    }

    func run() async throws {
        let target = try address.map(validateAddress)
        common.show(try await common.daemon().connect(target, force: force))
    }
}
