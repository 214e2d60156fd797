import ArgumentParser
import BlueZ
import ComposerCLIKit
import SpeakerdAPI

/// Options every subcommand that talks to speakerd shares.
struct CommonOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The message bus speakerd is on: system, session or a D-Bus address.",
        valueName: "bus"))
    var bus: String = "system"

    @Flag(help: "Print the result as JSON with stable keys.")
    var json = false

    func validate() throws {
        do { _ = try BusSelection(parsing: bus) } catch {
            throw ValidationError(error.description.replacing("for bus", with: "for --bus"))
        }
    }

    var busSelection: BusSelection { (try? BusSelection(parsing: bus)) ?? .system }

    /// Connects to speakerd on the chosen bus.
    func daemon() async throws -> SpeakerdDBusClient {
        try await SpeakerdClient.connect(busSelection)
    }

    /// Prints a report as JSON or as its human rendering.
    func show(json jsonText: @autoclosure () -> String, human: @autoclosure () -> String) {
        print(json ? jsonText() : human())
    }

    func show(_ report: StatusReport) { show(json: ReportJSON.encode(report), human: report.humanReadable) }
}

/// Parses a Bluetooth address argument, turning a malformed one into a usage error.
func validateAddress(_ text: String) throws -> BluetoothAddress {
    do { return try BluetoothAddress(text) } catch { throw ValidationError(error.description) }
}

extension CompletionKind {
    /// A song: the shells offer MIDI files (and directories to walk into) before anything else.
    static let midiFiles = CompletionKind.file(extensions: ["mid", "midi", "kar", "rmi", "smf"])
    /// A General MIDI soundfont.
    static let soundFonts = CompletionKind.file(extensions: ["sf2", "sf3"])
}
