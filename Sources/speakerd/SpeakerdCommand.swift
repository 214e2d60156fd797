import SpeakerdAPI
import Systemd
import ArgumentParser
import Logging
import Daemon
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Configuration

/// speakerd's command line: parse flags, set up logging, hand over to `DaemonLauncher`
/// (`SpeakerdMain` runs it).
struct SpeakerdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speakerd",
        abstract: "Keeps your Bluetooth speaker connected and plays MIDI on it.",
        discussion: """
            Normally started by systemd (speakerd.service) or by D-Bus activation when a request \
            arrives. Flags override the config file. The bus is the first of: --bus, the config \
            file's bus, the bus that activated speakerd (DBUS_STARTER_ADDRESS), the system bus \
            (DBUS_SYSTEM_BUS_ADDRESS when set).
            """,
        version: SpeakerdVersion.current)

    @Option(help: ArgumentHelp("Read the configuration from this file instead of /etc/speakerd/speakerd.conf.",
                               valueName: "file"))
    var config: String?

    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Keep the known speakers in this directory.", valueName: "dir"))
    var stateDirectory: String?

    @Option(help: ArgumentHelp("Serve and reach BlueZ on this bus: system, session or a D-Bus address.",
                               valueName: "bus"))
    var bus: String?

    @Option(name: .customLong("audio-output"),
            help: ArgumentHelp("Send audio here: auto, alsa:DEVICE, pulseaudio, file:PATH or null.",
                               valueName: "spec"))
    var audioOutput: String?

    @Option(help: ArgumentHelp("Use this General MIDI soundfont (default: /usr/share/sounds/sf2/TimGM6mb.sf2).",
                               valueName: "file"))
    var soundfont: String?

    var options: DaemonOptions {
        DaemonOptions(configPath: config, stateDirectory: stateDirectory, bus: bus,
                      audioOutput: audioOutput, soundfont: soundfont)
    }

    func validate() throws {
        do { try options.validate() } catch { throw ValidationError(error.description) }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, environment: environment) }
        try await DaemonLauncher.run(options: options, environment: ProcessInfo.processInfo.environment)
    }

    /// Every failure ends as one line on stderr and a non-zero exit (78 for configuration
    /// mistakes, 75 for a lost bus, see `DaemonLaunchError.exitStatus`); help and --version
    /// print in full. A lost bus's line is the daemon's own log line, so nothing is added.
    static func main() async {
        await CommandFailure.run(program: "speakerd") {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } outcome: { error in
            let code = exitCode(for: error)
            if code == .success { return .fullText(fullMessage(for: error)) }
            if let launch = error as? DaemonLaunchError {
                if launch.isLogged { return .logged(exitStatus: launch.exitStatus) }
                return .failure(message: launch.description, exitStatus: launch.exitStatus)
            }
            return .failure(message: message(for: error), exitStatus: code.rawValue)
        }
    }
}
