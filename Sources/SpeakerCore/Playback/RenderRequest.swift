/// `composer-cli render FILE -o OUT.wav`: read, load, render — offline, without the daemon.
///
/// Lives here rather than in the CLI so the executable only parses arguments, and so the same
/// path (our strict reader, then our scheduler) is what the tests exercise.
public struct RenderRequest: Sendable {
    public var midiPath: String
    public var outputPath: String
    public var soundFontPath: String

    public init(midiPath: String, outputPath: String, soundFontPath: String = SoundFont.defaultPath) {
        self.midiPath = midiPath
        self.outputPath = outputPath
        self.soundFontPath = soundFontPath
    }

    /// Reads the MIDI file (failing fast, before the slow SoundFont load), loads the SoundFont and
    /// renders the WAV. Every failure is a `RenderError` whose description is one line.
    public func run() async throws(RenderError) -> OfflineRenderer.Summary {
        let song: MIDISong
        do {
            song = try MIDIFileReader.read(contentsOfFile: midiPath)
        } catch {
            throw .midi(path: midiPath, error)
        }
        let soundFont: SoundFont
        do {
            soundFont = try await SoundFont.load(path: soundFontPath)
        } catch {
            throw .soundFont(error)
        }
        do {
            return try await OfflineRenderer.render(song, soundFont: soundFont, to: outputPath)
        } catch let error as AudioOutputError {
            throw .output(error)
        } catch {
            throw .other("\(error)")
        }
    }
}

/// Why `RenderRequest.run()` failed; the description is the line `composer-cli` prints.
public enum RenderError: Error, Sendable, Equatable {
    case midi(path: String, MIDIFileError)
    case soundFont(SoundFontError)
    case output(AudioOutputError)
    case other(String)
}

extension RenderError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .midi(path, error):
            if case .unreadable = error.kind { return error.description }
            return "\(path) is not a playable MIDI file: \(error)"
        case let .soundFont(error): return error.description
        case let .output(error): return error.description
        case let .other(message): return message
        }
    }
}
