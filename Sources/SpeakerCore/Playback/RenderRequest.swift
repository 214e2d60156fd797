import Glibc
import MIDI
import SystemPackage
/// `composer-cli render FILE -o OUT.wav`: read, load, render — offline, without the daemon.
///
/// Lives here rather than in the CLI so the executable only parses arguments, and so the same
/// path (our strict reader, then our scheduler) is what the tests exercise.
///
/// A valid file of a few bytes can hold hours of rest; rendering it would write gigabytes of
/// silence. So the song's length is checked before any audio is written: past
/// `maxDurationSeconds` (by default the reader's own limit) it is refused, and past what a WAV
/// file can hold (4 GiB: about 6 h 45 min at 44.1 kHz) too: speakerd writes no RF64.
public struct RenderRequest: Sendable {
    public var midiPath: String
    public var outputPath: String
    public var soundFontPath: String
    /// The longest song rendered, in seconds; a longer one is refused up front.
    public var maxDurationSeconds: Double
    /// Where to start and stop, a section looped, tempo, key, muted parts, a count-in.
    public var arrangement: SongArrangement

    public init(midiPath: String, outputPath: String, soundFontPath: String = SoundFont.defaultPath,
                maxDurationSeconds: Double = MIDIReadLimits.default.maxDurationSeconds,
                arrangement: SongArrangement = SongArrangement()) {
        self.midiPath = midiPath
        self.outputPath = outputPath
        self.soundFontPath = soundFontPath
        self.maxDurationSeconds = maxDurationSeconds
        self.arrangement = arrangement
    }

    /// The release tail a render may add after the song's last event.
    static let tailSeconds = 1.0

    /// How long a named pipe may go without a writer before the render gives up on it.
    public static let namedPipeWriterWait = Duration.seconds(5)

    /// The song at `midiPath`. What can never deliver a song is refused at once, as `play` refuses
    /// it: a directory, a device. A named pipe is opened without waiting (a plain open would wait
    /// for a writer for ever) and read once something writes to it; nothing within
    /// `namedPipeWriterWait` is one clear line. A pipe from the shell is read.
    private func readSong() throws(RenderError) -> MIDISong {
        let (descriptor, kind): (FileDescriptor, SongFileKind?)
        do {
            (descriptor, kind) = try SongFileKind.openWithoutWaiting(midiPath)
        } catch {
            throw .midi(path: midiPath, MIDIFileError(.unreadable(path: midiPath, reason: "\(error)")))
        }
        defer { try? descriptor.close() }
        if let kind, !kind.canHoldSong { throw .notASongFile(kind.refusal(of: midiPath)) }
        if kind == .namedPipe, !Self.awaitWriter(descriptor, within: Self.namedPipeWriterWait) {
            throw .notASongFile("nothing wrote to the named pipe \(midiPath) within \(Self.namedPipeWriterWait.components.seconds) s; "
                + "start its writer first (or pipe the song in: ... | composer-cli render /dev/stdin)")
        }
        // Reads block again: a pipe's writer may be slow (an interrupt still ends the command).
        let flags = fcntl(descriptor.rawValue, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor.rawValue, F_SETFL, flags & ~O_NONBLOCK) }
        do {
            return try MIDIFileReader.read(file: descriptor, name: midiPath)
        } catch {
            throw .midi(path: midiPath, error)
        }
    }

    /// Whether a writer opened the named pipe behind `descriptor` (it wrote, or opened and closed
    /// it) within `limit`: its read end polls readable or hung up from then on, never before.
    private static func awaitWriter(_ descriptor: FileDescriptor, within limit: Duration) -> Bool {
        var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + limit
        while true {
            let milliseconds = Int32(max(0, ((deadline - ContinuousClock.now) / .milliseconds(1)).rounded(.up)))
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    /// Reads the MIDI file and checks its length (failing fast, before the slow SoundFont load),
    /// then loads the SoundFont and renders the WAV. Every failure is a `RenderError` whose
    /// description is one line; a cancelled render throws `.cancelled` and leaves no file.
    public func run() async throws(RenderError) -> OfflineRenderer.Summary {
        // `-o DIR/` names a directory, whether it exists or not, and so does an existing DIR: say
        // so before any slow work.
        if outputPath.hasSuffix("/") || SongFileKind(path: outputPath) == .directory {
            throw .outputIsDirectory(outputPath)
        }
        var song = try readSong()
        let arranged: ArrangedSong
        do {
            arranged = try arrangement.arranged(song)
        } catch {
            throw .arrangement(path: midiPath, error)
        }
        song = arranged.song
        guard song.durationSeconds <= maxDurationSeconds else {
            throw .tooLong(path: midiPath, seconds: song.durationSeconds, limit: maxDurationSeconds)
        }
        // The rate is ours to choose, so what a WAV can hold is known before the slow load.
        let sampleRate = SoundFont.defaultSampleRate
        let fits = WAVHeader.maxSeconds(sampleRate: sampleRate)
        guard song.durationSeconds + Self.tailSeconds <= fits else {
            throw .tooLongForWAV(path: midiPath, seconds: song.durationSeconds, fits: fits - Self.tailSeconds)
        }
        let soundFont: SoundFont
        do {
            soundFont = try await SoundFont.load(path: soundFontPath, sampleRate: sampleRate)
        } catch {
            throw .soundFont(error)
        }
        do {
            return try await OfflineRenderer.render(arranged, soundFont: soundFont, to: outputPath)
        } catch let error as AudioOutputError {
            throw .output(error)
        } catch is CancellationError {
            throw .cancelled(output: outputPath)
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
    /// The song lasts `seconds`, more than the `limit` asked for (`--max-duration`).
    case tooLong(path: String, seconds: Double, limit: Double)
    /// The song lasts `seconds`; a WAV file holds at most `fits` seconds of it.
    case tooLongForWAV(path: String, seconds: Double, fits: Double)
    /// A control asked of the song does not fit it (no such bar, an unknown track…).
    case arrangement(path: String, SongArrangementError)
    /// The render was interrupted; nothing was written to `output`.
    case cancelled(output: String)
    /// `-o` names a directory, not the WAV file to write in it.
    case outputIsDirectory(String)
    /// The input can never deliver a song (a directory, a device, a named pipe): its refusal.
    case notASongFile(String)
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
        case let .tooLong(path, seconds, limit):
            return "\(path) lasts \(seconds.spokenHoursMinutes) (\(Int(seconds.rounded(.up))) s), longer than the "
                + "\(Int(limit)) s allowed; nothing was written (raise --max-duration to render it)"
        case let .tooLongForWAV(path, seconds, fits):
            return "\(path) lasts \(seconds.spokenHoursMinutes); a WAV file holds at most 4 GiB, "
                + "\(fits.spokenHoursMinutes) of this audio, so nothing was written"
        case let .arrangement(path, error):
            return "\(path): \(error)"
        case let .cancelled(output):
            return "the render was interrupted; nothing was written to \(output)"
        case let .outputIsDirectory(path):
            let directory = path.hasSuffix("/") ? String(path.dropLast()) : path
            return "\(path) is a directory: name the WAV file to write in it (-o \(directory)/song.wav)"
        case let .notASongFile(refusal): return refusal
        case let .other(message): return message
        }
    }
}

extension Double {
    /// "7 h 0 min", "6 h 45 min", "12 min 3 s", "4.2 s": a long duration as a person reads it.
    var spokenHoursMinutes: String {
        let total = Int(self.rounded(.down))
        if total >= 3600 { return "\(total / 3600) h \(total % 3600 / 60) min" }
        if total >= 60 { return "\(total / 60) min \(total % 60) s" }
        return "\((self * 10).rounded() / 10) s"
    }
}
