@testable import Readiness
@testable import Daemon
@testable import SpeakerdAPI
import Testing

@Suite("Start-up graphs per scenario")
struct StartupScenarioGraphTests {
    typealias Step = StartupScenarios.Step

    @Test("regular start connects the last speaker while the soundfont loads politely after READY=1 and the Connect")
    func regular() throws {
        let scenario = StartupScenarios.scenario(for: .init(hasKnownSpeakers: true, autoPick: false, requestWaiting: false))
        let plan = try scenario.plan()
        #expect(plan.scenario == "regular")
        #expect(plan.waits(Step.bluez, for: Step.bus))
        #expect(plan.waits(Step.adapter, for: Step.bluez))
        #expect(plan.waits(Step.connectKnown, for: Step.adapter))
        #expect(plan.waits(Step.connectKnown, for: Step.config))
        #expect(plan.mayRunInParallel(Step.connectKnown, Step.soundfont))
        // Off the critical path: after READY=1 (the bus step), never before any Bluetooth step,
        // and its body waits for the Connect to be issued.
        #expect(plan.waits(Step.soundfont, for: Step.bus))
        for step in [Step.bus, Step.bluez, Step.adapter, Step.connectKnown] {
            #expect(!plan.waits(step, for: Step.soundfont), "\(step) waits for the soundfont")
        }
        #expect(StartupScenarios.soundfontWaitsForConnect(in: scenario))
        #expect(plan.mayRunInParallel(Step.bus, Step.audioBackend))
        #expect(plan.prerequisites(of: Step.playbackReady).isSuperset(of: [Step.connectKnown, Step.soundfont, Step.audioBackend]))
        #expect(!plan.waves.joined().contains(Step.scanAndPick))
        #expect(StartupScenarios.budget(for: StartupScenarios.regular) == .seconds(3))
    }

    @Test("first run scans and picks; without auto-pick it ends waiting for the user, with no budget")
    func firstRun() throws {
        let manual = StartupScenarios.scenario(for: .init(hasKnownSpeakers: false, autoPick: false, requestWaiting: false))
        let plan = try manual.plan()
        #expect(plan.scenario == "first run")
        #expect(plan.waits(Step.scanAndPick, for: Step.adapter))
        #expect(!plan.waves.joined().contains(Step.playbackReady))
        #expect(!plan.waves.joined().contains(Step.connectKnown))
        #expect(StartupScenarios.budget(for: manual) == nil)

        #expect(plan.waits(Step.soundfont, for: Step.bus))
        #expect(!StartupScenarios.soundfontWaitsForConnect(in: manual))

        let automatic = try StartupScenarios.firstRun(autoPick: true).plan()
        #expect(automatic.waits(Step.playbackReady, for: Step.scanAndPick))
        #expect(automatic.waits(Step.playbackReady, for: Step.soundfont))
        #expect(automatic.mayRunInParallel(Step.scanAndPick, Step.soundfont))
    }

    @Test("a start launched by a play request requires the soundfont, still after READY=1 and the Connect")
    func launchedByRequest() throws {
        let scenario = StartupScenarios.scenario(for: .init(hasKnownSpeakers: true, autoPick: false, requestWaiting: true))
        #expect(scenario.name == "launched by request")
        let soundfont = try #require(scenario.steps.first { $0.name == Step.soundfont })
        #expect(soundfont.requirement == .required)
        let regularSoundfont = try #require(StartupScenarios.regular.steps.first { $0.name == Step.soundfont })
        #expect(regularSoundfont.requirement == .optional)
        let plan = try scenario.plan()
        #expect(plan.waits(Step.playbackReady, for: Step.soundfont))
        #expect(plan.waits(Step.playbackReady, for: Step.connectKnown))
        #expect(plan.waits(Step.soundfont, for: Step.bus))
        #expect(!plan.waits(Step.connectKnown, for: Step.soundfont))
        // A first run without auto_pick ends waiting for the person, as the first run does: no
        // playbackReady step takes their time at the picker for start-up's.
        let manual = StartupScenarios.scenario(for: .init(hasKnownSpeakers: false, autoPick: false, requestWaiting: true))
        #expect(manual.name == "launched by request" && !manual.steps.contains { $0.name == Step.playbackReady })
        #expect(StartupScenarios.scenario(for: .init(hasKnownSpeakers: false, autoPick: true, requestWaiting: true))
            .steps.contains { $0.name == Step.playbackReady })
        #expect(StartupScenarios.soundfontWaitsForConnect(in: scenario))
        #expect(!StartupScenarios.soundfontWaitsForConnect(in: StartupScenarios.launchedByRequest(hasKnownSpeakers: false)))
    }

    @Test("BlueZ and the adapter are required in every scenario: they are the compatibility gate")
    func compatibilityGate() {
        for scenario in [StartupScenarios.regular, StartupScenarios.firstRun(autoPick: true), StartupScenarios.firstRun(autoPick: false),
                         StartupScenarios.launchedByRequest(hasKnownSpeakers: false)] {
            for name in [Step.config, Step.bus, Step.bluez, Step.adapter] {
                #expect(scenario.steps.first { $0.name == name }?.requirement == .required, "\(scenario.name): \(name)")
            }
        }
    }

    @Test("the sequencer's timeline becomes the startup report with stable outcome words")
    func timelineToReport() {
        let timeline = StartupTimeline(scenario: "regular", operations: [
            .init(name: "config", startMs: 0, endMs: 1, outcome: .ok, dependencies: []),
            .init(name: "bluez", startMs: 1, endMs: 3, outcome: .failed("org.bluez is not on the bus"), dependencies: ["config"]),
            .init(name: "adapter", startMs: 3, endMs: 3, outcome: .skipped("bluez failed"), dependencies: ["bluez"]),
        ], criticalPath: ["config", "bluez"], totalMs: 3, abortReason: "no BlueZ", budgetMs: 3000, budgetExceeded: false)
        let report = StartupReport(timeline)
        #expect(report.operations.map(\.outcome) == ["ok", "failed", "skipped"])
        #expect(report.criticalPath == ["config", "bluez"])
        #expect(report.scenario == "regular")
    }
}
