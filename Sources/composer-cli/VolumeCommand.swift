import ArgumentParser
import ComposerCLIKit
import SpeakerdAPI

struct VolumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "volume",
        abstract: "Shows or sets the connected speaker's volume.",
        // The value is collected as "anything unrecognised" (see below), which the default usage
        // line would show as a list.
        usage: "composer-cli volume [N | +N | -N] [--bus <bus>] [--json]",
        discussion: """
            Without a value it shows the volume. N sets it to N percent (0 to 100); +N and -N \
            raise or lower it by N, stopping at 0 and 100. The volume is the speaker's own \
            (BlueALSA's or the sound server's, passed on to the speaker), and speakerd gives it \
            back to this speaker when it next connects.
            """)

    // `-5` looks like an option to the parser: the value is whatever it does not recognise.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp(
        "The volume in percent (0 to 100), or +N / -N to change it.", valueName: "N | +N | -N"))
    var value: [String] = []

    @OptionGroup var common: CommonOptions

    func validate() throws { _ = try change() }

    /// The change asked for; nil to only show the volume.
    func change() throws -> VolumeChange? {
        // `volume -- -10`: the `--` that ends options is the shell idiom, not a value.
        let words = value.first == "--" ? Array(value.dropFirst()) : value
        guard let text = words.first else { return nil }
        guard words.count == 1 else { throw ValidationError("give one volume value, not \(words.count): \(words.joined(separator: " "))") }
        do { return try VolumeChange(parsing: text) } catch { throw ValidationError(error.description) }
    }

    func run() async throws {
        let daemon = try await common.daemon()
        let report = if let change = try change() { try await daemon.setVolume(change) } else { try await daemon.volume() }
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
    }
}
