import ArgumentParser
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import MIDI
import Playback
import Synchronization
import ComposerCLIKit
import SpeakerdAPI

/// `composer-cli render FILE -o OUT.wav`: offline rendering, no daemon involved.
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Renders a MIDI file to a WAV file without the daemon.",
        discussion: """
            The song's length is checked before anything is written. A song longer than \
            --max-duration is refused, and so is one longer than a WAV file can hold (4 GiB: \
            about 6 h 45 min at 44.1 kHz; no RF64 file is written). The WAV is written to a \
            hidden .partial file beside the output and renamed into place when complete; on an \
            error, Ctrl-C or SIGTERM that file is removed and nothing is left behind.
            """
    )

    @Argument(help: "The MIDI file to render.", completion: .midiFiles)
    var file: String

    @Option(name: [.short, .customLong("output")], help: "The WAV file to write (16-bit stereo, 44.1 kHz).",
            completion: .file(extensions: ["wav"]))
    var output: String

    @Option(name: .customLong("soundfont"), help: "The SoundFont to render with.", completion: .soundFonts)
    var soundFont: String = SoundFont.defaultPath

    @Option(name: .customLong("max-duration"), help: ArgumentHelp(
        "Refuses songs longer than this many seconds.", valueName: "secs"))
    var maxDuration: Double = MIDIReadLimits.default.maxDurationSeconds

    @OptionGroup(title: "The composer's controls")
    var arrangement: ArrangementOptions

    func validate() throws {
        guard maxDuration.isFinite, maxDuration > 0 else {
            throw ValidationError("--max-duration must be a positive number of seconds.")
        }
    }

    func run() async throws {
        let request = RenderRequest(midiPath: file, outputPath: output, soundFontPath: soundFont,
                                    maxDurationSeconds: maxDuration, arrangement: try arrangement.arrangement())
        // The interrupt is followed before the render begins, so none is missed; a signal before
        // the render's task exists cancels it as soon as it does.
        let render = RenderInFlight()
        let interruption = Interruption { signal in
            render.cancel()
            // A render stops at its next block once cancelled; one still reading a pipe whose
            // writer never closes cannot see it, so after a moment the command ends regardless
            // (no partial WAV exists before the song is read).
            Interruption.exit(after: signal, in: .milliseconds(700),
                              saying: "the render was interrupted; nothing was written to \(output)")
        }
        defer { interruption.stop() }
        let rendering = render.start { try await request.run() }
        do {
            let summary = try await rendering.value
            print("rendered \(file) to \(output): \(twoDecimals(summary.audioSeconds)) s")
        } catch {
            // The error is the command's one stderr line (CommandFailure writes it).
            // Interrupted: one line, then exit as the signal would have (130 for Ctrl-C, 143 for
            // SIGTERM); the partial file is already gone.
            if let signal = interruption.received { Interruption.exit(after: signal, saying: "\(error)") }
            throw SpeakerdError.local("\(error)")
        }
    }
}

/// The render's task, once it exists, for an interrupt handled on another thread to cancel.
final class RenderInFlight: Sendable {
    private let state = Mutex<(task: Task<OfflineRenderer.Summary, any Error>?, cancelled: Bool)>((nil, false))

    func start(_ work: @escaping @Sendable () async throws -> OfflineRenderer.Summary) -> Task<OfflineRenderer.Summary, any Error> {
        let task = Task { try await work() }
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
        return task
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}

/// "2.50": seconds to two decimals, as `%.2f` would print them (without Foundation's formatter).
func twoDecimals(_ value: Double) -> String {
    let hundredths = Int((value * 100).rounded())
    let fraction = abs(hundredths % 100)
    return "\(hundredths < 0 ? "-" : "")\(abs(hundredths) / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}
