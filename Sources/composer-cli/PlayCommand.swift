import ArgumentParser
import Foundation
import SpeakerCore
import SystemPackage

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Plays a MIDI file on the speaker, waiting for it to be ready if need be.",
        discussion: "The file is opened here and handed to speakerd, which never opens your paths.")

    @Argument(help: ArgumentHelp("The Standard MIDI File to play.", valueName: "file"))
    var file: String

    @Flag(help: "Add the song to the queue instead of replacing the current one.")
    var queue = false

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let descriptor: FileDescriptor
        do { descriptor = try FileDescriptor.open(file, .readOnly, options: [.closeOnExec]) } catch {
            throw SpeakerdError.local("cannot open \(file): \(error)")
        }
        defer { try? descriptor.close() }
        let name = URL(fileURLWithPath: file).lastPathComponent
        let request = PlayRequest(file: descriptor, displayName: name, queue: queue)
        common.show(try await common.daemon().play(request))
    }
}
