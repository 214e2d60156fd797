import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ComposerCLIKit
import Configuration
import SpeakerdAPI

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Checks this machine for what speakerd needs: config, state, soundfont, Bluetooth, the bus and the sound stack.",
        discussion: """
            Works without the daemon; the sound server is looked for from this shell's environment. When speakerd is \
            running, its own view of its audio path is shown as well. Exits non-zero when a check finds a problem.
            """)

    @Option(help: ArgumentHelp("The config file speakerd reads.", valueName: "file"))
    var config: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("The directory speakerd keeps its state in.", valueName: "dir"))
    var stateDirectory: String?

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let options = DaemonOptions(configPath: config, stateDirectory: stateDirectory, bus: common.bus)
        let local = await LocalDoctor(options: options, environment: ProcessInfo.processInfo.environment)
            .run(soundStack: SoundStackDoctor())
        let report = SoundStackDoctor.addingDaemonView(await SpeakerdClient.statusIfRunning(common.busSelection), to: local)
        common.show(json: ReportJSON.encode(report), human: report.humanReadable)
        let problems = report.checks.filter { $0.outcome == .problem }.count
        if problems > 0 {
            throw SpeakerdError.local("doctor found \(problems) problem\(problems == 1 ? "" : "s")")
        }
    }
}
