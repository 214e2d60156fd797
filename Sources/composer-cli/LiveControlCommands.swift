import ArgumentParser
import ComposerCLIKit
import Playback
import SpeakerdAPI

/// The composer's controls while a song plays: each is one `Adjust` call, read here first so a
/// typo gets its one-line error before the bus is asked, and read again by speakerd.
///
/// The value is taken as given even when it starts with '-' (`seek -2`, `transpose -3`), so it
/// is gathered from whatever the common options leave.
protocol LiveControlCommand: AsyncParsableCommand {
    static var controlName: String { get }
    var common: CommonOptions { get }
    var words: [String] { get }
}

extension LiveControlCommand {
    /// Whether the control takes a value (all but `unmute`).
    static var takesValue: Bool { controlName != "unmute" }

    func validate() throws {
        if Self.takesValue {
            guard words.count == 1 else {
                throw ValidationError(words.isEmpty ? "Missing the value: \(Self.configuration.usage ?? Self.controlName)"
                                                    : "One value only, not \(words.count): \(words.joined(separator: " "))")
            }
        } else if !words.isEmpty {
            throw ValidationError("'\(Self.controlName)' takes no value, not \(words.joined(separator: " "))")
        }
        do { _ = try LiveControl(name: Self.controlName, value: words.first ?? "") } catch {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        common.show(try await common.daemon().adjust(LiveControlRequest(name: Self.controlName, value: words.first ?? "")))
    }
}

/// `composer-cli seek POS|+N|-N`.
struct SeekCommand: LiveControlCommand {
    static let controlName = "seek"
    static let configuration = CommandConfiguration(
        commandName: "seek",
        abstract: "Goes to a place in the playing song: a bar (17, 17:3, 17:3:120), seconds (12.5s), or bars forward or back (+2, -1).",
        usage: "composer-cli seek <position>",
        discussion: "The song's programs, controllers, pitch bend and sustain at that place are set before its first note there; "
            + "nothing that sounded goes on. A seek outside a loop's section turns the loop off.")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("BAR[:BEAT[:TICK]], SECONDSs, +N or -N bars.", valueName: "position"))
    var words: [String] = []
}

/// `composer-cli loop A-B|off`.
struct LoopCommand: LiveControlCommand {
    static let controlName = "loop"
    static let configuration = CommandConfiguration(
        commandName: "loop",
        abstract: "Loops a section of the playing song until 'loop off' (17-24: the start of bar 17 to the end of bar 24).",
        usage: "composer-cli loop <section>",
        discussion: "The loop is gapless: at its end every held note is released and the state at its start is restored, "
            + "on the same frame, every pass. Set while the song is outside the section, it goes to the section's start.")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("A-B (bars or seconds), or off.", valueName: "section"))
    var words: [String] = []
}

/// `composer-cli tempo N%|NBPM`.
struct TempoCommand: LiveControlCommand {
    static let controlName = "tempo"
    static let configuration = CommandConfiguration(
        commandName: "tempo",
        abstract: "Plays the song at another tempo (80%, 96bpm; 100% is as written); the pitch is unchanged.",
        usage: "composer-cli tempo <tempo>")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("A percentage (10% to 400%) or beats per minute.", valueName: "tempo"))
    var words: [String] = []
}

/// `composer-cli transpose ±N`.
struct TransposeCommand: LiveControlCommand {
    static let controlName = "transpose"
    static let configuration = CommandConfiguration(
        commandName: "transpose",
        abstract: "Plays the song in another key: semitones from the written key (-2, +3; 0 is as written); drums stay.",
        usage: "composer-cli transpose <semitones>")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("-48 to +48 semitones.", valueName: "semitones"))
    var words: [String] = []
}

/// `composer-cli mute LIST`.
struct MuteCommand: LiveControlCommand {
    static let controlName = "mute"
    static let configuration = CommandConfiguration(
        commandName: "mute",
        abstract: "Silences parts of the playing song: channels (1-16) or track names, separated by commas.",
        usage: "composer-cli mute <parts>")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Channels or track names, comma-separated.", valueName: "parts"))
    var words: [String] = []
}

/// `composer-cli solo LIST`.
struct SoloCommand: LiveControlCommand {
    static let controlName = "solo"
    static let configuration = CommandConfiguration(
        commandName: "solo",
        abstract: "Plays only these parts of the song: channels (1-16) or track names, separated by commas.",
        usage: "composer-cli solo <parts>")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Channels or track names, comma-separated.", valueName: "parts"))
    var words: [String] = []
}

/// `composer-cli unmute`.
struct UnmuteCommand: LiveControlCommand {
    static let controlName = "unmute"
    static let configuration = CommandConfiguration(
        commandName: "unmute",
        abstract: "Every part of the playing song sounds again (mute and solo cleared).")

    @OptionGroup var common: CommonOptions
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var words: [String] = []
}
