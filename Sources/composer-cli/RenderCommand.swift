import ArgumentParser
import Foundation
import SpeakerCore

/// `composer-cli render FILE -o OUT.wav`: offline rendering, no daemon involved.
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Renders a MIDI file to a WAV file without the daemon."
    )

    @Argument(help: "The MIDI file to render.")
    var file: String

    @Option(name: [.short, .customLong("output")], help: "The WAV file to write (16-bit stereo, 44.1 kHz).")
    var output: String

    @Option(name: .customLong("soundfont"), help: "The SoundFont to render with.")
    var soundFont: String = SoundFont.defaultPath

    func run() async throws {
        do {
            let summary = try await RenderRequest(midiPath: file, outputPath: output, soundFontPath: soundFont).run()
            let seconds = String(format: "%.2f", summary.audioSeconds)
            print("rendered \(file) to \(output): \(seconds) s")
        } catch {
            // The error is the command's one stderr line (CommandFailure writes it).
            throw SpeakerdError.local("\(error)")
        }
    }
}
