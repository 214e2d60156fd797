import ArgumentParser
import ComposerCLIKit
import SpeakerdAPI

/// `composer-cli queue`: the songs waiting behind the current one.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Lists the songs queued behind the current one (position, name, length).",
        discussion: "Songs join the queue with 'play --queue' or when 'play' is given several files; "
            + "'skip' moves on to the next, 'clear' empties the queue.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let playback = try await common.daemon().status().playback
        common.show(json: ReportJSON.encode(QueueReport(playback)), human: QueueReport(playback).humanReadable)
    }
}

/// `composer-cli skip`: the next queued song now.
struct SkipCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "skip",
        abstract: "Ends the current song and plays the next queued one (stops when nothing is queued).")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().skip())
    }
}

/// `composer-cli clear`: an empty queue; the current song plays on.
struct ClearCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Empties the queue; the current song plays on.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        common.show(try await common.daemon().clearQueue())
    }
}
