@testable import Readiness
import Testing

/// The daemon's three start-up shapes, as the sequencer sees them.
enum Scenarios {
    static let regular = StartupScenario("regular", steps: [
        StartupStep("load config"),
        StartupStep("connect bus", after: ["load config"]),
        StartupStep("preload soundfont", after: ["load config"], .optional),
        StartupStep("find BlueZ", after: ["connect bus"]),
        StartupStep("check audio backend", after: ["connect bus"], .optional),
        StartupStep("power adapter", after: ["find BlueZ"]),
        StartupStep("connect last speaker", after: ["power adapter"], .optional),
        StartupStep("playback ready", after: ["connect last speaker", "preload soundfont", "check audio backend"]),
    ])

    static let firstRun = StartupScenario("first run", steps: [
        StartupStep("load config"),
        StartupStep("connect bus", after: ["load config"]),
        StartupStep("preload soundfont", after: ["load config"], .optional),
        StartupStep("find BlueZ", after: ["connect bus"]),
        StartupStep("power adapter", after: ["find BlueZ"]),
        StartupStep("scan for speakers", after: ["power adapter"]),
        StartupStep("pick a speaker", after: ["scan for speakers"]),
        StartupStep("connect picked speaker", after: ["pick a speaker"]),
        StartupStep("playback ready", after: ["connect picked speaker", "preload soundfont"]),
    ])

    static let launchedByRequest = StartupScenario("launched by a request", steps: [
        StartupStep("load config"),
        StartupStep("connect bus", after: ["load config"]),
        StartupStep("export API", after: ["connect bus"]),
        StartupStep("preload soundfont", after: ["load config"], .optional),
        StartupStep("find BlueZ", after: ["connect bus"]),
        StartupStep("power adapter", after: ["find BlueZ"]),
        StartupStep("connect last speaker", after: ["power adapter"]),
        StartupStep("playback ready", after: ["connect last speaker", "preload soundfont"]),
        StartupStep("serve the request", after: ["playback ready", "export API"]),
    ])
}

@Suite("Start-up scenarios: the shape of each graph, without running it", .timeLimit(.minutes(1)))
struct StartupScenarioTests {
    @Test("regular start connects the last speaker while the soundfont loads")
    func regular() throws {
        let plan = try Scenarios.regular.plan()
        #expect(plan.waves == [
            ["load config"],
            ["connect bus", "preload soundfont"],
            ["find BlueZ", "check audio backend"],
            ["power adapter"],
            ["connect last speaker"],
            ["playback ready"],
        ])
        #expect(plan.mayRunInParallel("connect last speaker", "preload soundfont"))
        #expect(plan.mayRunInParallel("power adapter", "check audio backend"))
        #expect(plan.waits("connect last speaker", for: "power adapter"))
        #expect(plan.waits("playback ready", for: "load config"), "transitively")
        #expect(!plan.waits("preload soundfont", for: "connect bus"))
    }

    @Test("first run scans and waits for a pick, with the soundfont loading alongside")
    func firstRun() throws {
        let plan = try Scenarios.firstRun.plan()
        #expect(plan.waves.count == 8)
        #expect(plan.wave(of: "pick a speaker") == 5)
        #expect(plan.mayRunInParallel("scan for speakers", "preload soundfont"))
        #expect(plan.waits("connect picked speaker", for: "pick a speaker"))
        #expect(plan.prerequisites(of: "scan for speakers") == ["power adapter", "find BlueZ", "connect bus", "load config"])
    }

    @Test("launched by a request serves it only once playback is ready and the API is exported")
    func launchedByRequest() throws {
        let plan = try Scenarios.launchedByRequest.plan()
        #expect(plan.waves.last == ["serve the request"])
        #expect(plan.mayRunInParallel("export API", "find BlueZ"))
        #expect(plan.waits("serve the request", for: "export API"))
        #expect(plan.waits("serve the request", for: "connect last speaker"))
    }

    @Test("a dependency cycle is an error naming every operation in it")
    func cycleIsNamed() {
        let scenario = StartupScenario("broken", steps: [
            StartupStep("load config"),
            StartupStep("connect bus", after: ["load config", "power adapter"]),
            StartupStep("find BlueZ", after: ["connect bus"]),
            StartupStep("power adapter", after: ["find BlueZ"]),
        ])
        #expect(throws: StartupGraphError.cycle(["connect bus", "power adapter", "find BlueZ", "connect bus"])) {
            try scenario.plan()
        }
        let message = StartupGraphError.cycle(["a", "b", "a"]).description
        #expect(message == "start-up graph has a dependency cycle: a → b → a")
    }

    @Test("an operation depending on itself is a cycle")
    func selfCycle() {
        let scenario = StartupScenario("self", steps: [StartupStep("connect", after: ["connect"])])
        #expect(throws: StartupGraphError.cycle(["connect", "connect"])) { try scenario.plan() }
    }

    @Test("a missing dependency is an error naming the operation and what it lacks")
    func missingDependencyIsNamed() {
        let scenario = StartupScenario("typo", steps: [
            StartupStep("load config"),
            StartupStep("connect bus", after: ["load cnofig"]),
        ])
        #expect(throws: StartupGraphError.missingDependency(operation: "connect bus", dependency: "load cnofig")) {
            try scenario.plan()
        }
        #expect(
            StartupGraphError.missingDependency(operation: "connect bus", dependency: "load cnofig").description
                == "start-up operation 'connect bus' depends on 'load cnofig', which is not in the graph"
        )
    }

    @Test("a duplicate name and a step without work are errors too")
    func duplicatesAndMissingBodies() {
        let duplicate = StartupScenario("dup", steps: [StartupStep("a"), StartupStep("a")])
        #expect(throws: StartupGraphError.duplicateOperation("a")) { try duplicate.plan() }
        #expect(throws: StartupGraphError.missingBody("connect bus")) {
            try StartupSequencer(scenario: Scenarios.regular, operations: ["load config": { _ in }])
        }
    }
}
