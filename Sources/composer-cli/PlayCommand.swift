import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ComposerCLIKit
import Dispatch
import Glibc
import Playback
import SpeakerdAPI
import Synchronization
import SystemPackage

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Plays a MIDI file on the speaker, waiting for it to be ready if need be.",
        discussion: "The file is opened here and handed to speakerd, which never opens your paths. "
            + "The composer's controls (--from, --to, --loop, --tempo, --transpose, --mute, --solo, --count-in) "
            + "play it as `render` would write it.")

    /// Several files are a playlist: the first plays (or joins the queue with --queue), the
    /// others join the queue behind it, in order.
    @Argument(help: ArgumentHelp("The Standard MIDI File to play; more files are queued behind it.", valueName: "file"),
              completion: .midiFiles)
    var files: [String]

    @Flag(help: "Add the song to the queue instead of replacing the current one.")
    var queue = false

    @Flag(help: "Wait until the song has finished, showing its progress on a terminal; Ctrl-C then stops the song.")
    var wait = false

    @Flag(help: "With --wait: Ctrl-C (or SIGTERM) ends the wait and leaves the song playing.")
    var detach = false

    @OptionGroup(title: "The composer's controls") var arrangement: ArrangementOptions

    @OptionGroup var common: CommonOptions

    /// Opens `file` for speakerd; what can never deliver a song fails here, before speakerd is
    /// asked: a directory, /dev/null or /dev/zero, a named pipe nobody may ever write to. A pipe
    /// from the shell (`cat song.mid | composer-cli play /dev/stdin`) is fine.
    private func open(_ file: String) throws -> FileDescriptor {
        // Without waiting, so a named pipe opens at once (to be refused) instead of waiting for a writer.
        let (descriptor, kind): (FileDescriptor, SongFileKind?)
        do { (descriptor, kind) = try SongFileKind.openWithoutWaiting(file) } catch {
            throw SpeakerdError.local("cannot open \(file): \(error)")
        }
        if let kind, !kind.canHoldSong || kind == .namedPipe {
            try? descriptor.close()
            throw SpeakerdError.local(kind.refusal(of: file))
        }
        return descriptor
    }

    func validate() throws {
        if detach, !wait { throw ValidationError("--detach goes with --wait: without --wait the song always plays on") }
    }

    func run() async throws {
        // Every file is opened before anything is sent: a playlist with a typo plays nothing.
        var descriptors: [FileDescriptor] = []
        defer { for descriptor in descriptors { try? descriptor.close() } }
        for file in files { descriptors.append(try open(file)) }
        let names = files.map { URL(fileURLWithPath: $0).lastPathComponent }
        let daemon = try await common.daemon()
        // With --wait the person is at the song, as with aplay or fluidsynth: an interrupt stops
        // it (unless --detach), says which in one line, and ends the command within a second.
        let interruption = wait ? Interruption { signal in
            Self.interrupted(by: signal, song: names.last ?? names[0], stopping: !detach, daemon: daemon)
        } : nil
        defer { interruption?.stop() }
        // The playlist's rest joins the queue first-to-last once the first is sent; the first
        // alone decides what the command reports and waits for.
        let first = PlayRequest(file: descriptors[0], displayName: names[0], queue: queue, arrangement: arrangement.text)
        try await playFirst(first, then: Array(zip(descriptors, names).dropFirst()), daemon: daemon)
    }

    private func playFirst(_ request: PlayRequest, then rest: [(FileDescriptor, String)], daemon: SpeakerdDBusClient) async throws {
        let name = request.displayName
        // Subscribed before the song is sent, so no change is missed; without it, poll.
        let wakeUps = wait ? try? await daemon.playbackChanges() : nil
        let terminal = wait && !common.json && isatty(STDOUT_FILENO) == 1
        let frames = RedrawCounter()
        // speakerd answers Play once the song starts (or cannot): until then, on a terminal, the
        // spinner line says what it is waiting for (the speaker to connect, its audio device…).
        let waiting = terminal ? showWaiting(for: name, daemon: daemon, frames: frames) : nil
        let answer: Result<StatusReport, SpeakerdError>
        do { answer = .success(try await daemon.play(request)) } catch { answer = .failure(error) }
        waiting?.cancel()
        if let waiting, await waiting.value, case .failure = answer { print("") }  // the error goes below the line
        let started = try answer.get()
        var latest = started
        for (descriptor, queuedName) in rest {
            latest = try await daemon.play(PlayRequest(file: descriptor, displayName: queuedName, queue: true,
                                                       arrangement: arrangement.text))
        }
        guard wait else {
            common.show(latest)
            return
        }
        // A playlist with --wait follows its last song to its end.
        try await follow(rest.last?.1 ?? name, after: latest, daemon: daemon, wakeUps: wakeUps, terminal: terminal, frames: frames)
    }

    /// `--wait`: follows the song `name` to its end, with a progress line on a terminal.
    private func follow(_ name: String, after started: StatusReport, daemon: SpeakerdDBusClient,
                        wakeUps: AsyncStream<Void>?, terminal: Bool, frames: RedrawCounter) async throws {
        if !terminal && !common.json { print(started.humanReadable) }
        // Which process serves speakerd: a restart mid-song is then reported, not waited out.
        let instance: @Sendable () async -> String? = { await daemon.daemonInstance() }
        let outcome = try await PlaybackWaiter(control: daemon, daemonInstance: instance).wait(for: name, wakeUps: wakeUps) { status in
            guard terminal else { return }
            let line = ProgressLine(title: name, speaker: status.speaker?.name,
                                    elapsedSeconds: status.playback.positionSeconds ?? 0,
                                    totalSeconds: status.playback.durationSeconds, state: status.playback.state,
                                    waitingFor: status.waitingFor?.message, frame: frames.next())
            print("\r" + line.rendered(width: terminalWidth() - 1), terminator: "")
            fflush(nil)  // the line has no newline to flush it
        }
        if terminal { print("") }
        if common.json { print(ReportJSON.encode(PlayWaitReport(file: name, outcome: outcome, started: started))) }
        // A song lost to an error or replaced by another ends the command non-zero, with its line on stderr.
        guard outcome.endedAsAsked else { throw SpeakerdError.local(outcome.sentence(for: name)) }
        if !common.json { print(outcome.sentence(for: name)) }
    }

    /// While the song waits to start: speakerd's reason with a spinner, redrawn at the status
    /// poll interval (the playback signals are the waiter's, afterwards). Returns whether it drew.
    private func showWaiting(for name: String, daemon: SpeakerdDBusClient, frames: RedrawCounter) -> Task<Bool, Never> {
        let width = terminalWidth() - 1
        return Task {
            var drew = false
            while !Task.isCancelled {
                if let status = try? await daemon.status(), status.playback.state == "waiting",
                   status.playback.file == name, let reason = status.waitingFor?.message, !Task.isCancelled {
                    let line = ProgressLine(title: name, speaker: status.speaker?.name, elapsedSeconds: 0, totalSeconds: nil,
                                            state: "waiting", waitingFor: reason, frame: frames.next())
                    print("\r" + line.rendered(width: width), terminator: "")
                    fflush(nil)
                    drew = true
                }
                try? await Task.sleep(for: PlaybackWaiter.minimumPollInterval)
            }
            return drew
        }
    }

    /// An interrupt during `--wait`: the song is stopped (or left playing with `--detach`), one
    /// line on stderr says which, and the command exits as the signal would (130, 143). A daemon
    /// that does not answer the stop within a second is not waited for: the line says so.
    private static func interrupted(by signal: Int32, song: String, stopping: Bool, daemon: SpeakerdDBusClient) {
        // Below the progress line, which has no newline of its own, on a terminal.
        @Sendable func finish(_ line: String) -> Never { Interruption.exit(after: signal, saying: line, belowProgress: true) }
        guard stopping else { finish("interrupted: \(song) plays on ('composer-cli stop' stops it)") }
        Interruption.exit(after: signal, in: .milliseconds(900), saying: "interrupted: speakerd did not answer the stop in time; "
                          + "'composer-cli stop' stops \(song)", belowProgress: true)
        Task {
            do {
                _ = try await daemon.stop()
                finish("interrupted: stopped \(song) (play --wait --detach leaves a song playing)")
            } catch {
                finish("interrupted: could not stop \(song): \(error)")
            }
        }
    }

    /// The terminal's width in columns (80 when it cannot be asked).
    private func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}

/// Counts redraws of the progress line (the spinner's frame).
final class RedrawCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
}
