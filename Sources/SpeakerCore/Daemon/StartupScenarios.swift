import AsyncSignals
import Readiness
import SpeakerdAPI
/// speakerd's start-up graphs, one per situation, as data the sequencer runs and tests assert.
///
/// The state file is read before the sequence starts, because it decides the scenario (known
/// speakers or not); it is a single small file read. Every graph then starts the same way: the
/// configuration check, then the bus (so the API answers, and
/// READY=1 goes out, as early as possible) and BlueZ → adapter, which form the compatibility
/// gate: if either aborts, the rest is cancelled and the daemon waits for the condition to clear.
/// The audio-backend check runs in parallel with the Bluetooth chain.
///
/// The soundfont preload is deliberately **off the critical path** ("a polite deferred
/// task after start-up"). Loading it opens libfluidsynth (about 80 shared libraries) and parses
/// the font: tens to hundreds of milliseconds of CPU and disk that, run alongside, would delay
/// READY=1 and the `Connect` on a 2-core box. So its step comes after `bus` (READY=1 is out), and
/// its body waits until the speaker step has issued its `Connect` (when the graph has one), then
/// runs the load through the readiness gate's polite runner, so it still trickles in behind
/// anything urgent. It runs in parallel with the connection, is recorded in the timeline like
/// every step (its span includes that wait), and `playbackReady` still waits for it: playback
/// ready means the audio path is there **and** the soundfont is loaded, so a play accepted at
/// `playbackReady` starts at once, and one asked earlier waits in the gate.
public enum StartupScenarios {
    /// Operation names: stable, they appear in `composer-cli startup`.
    public enum Step {
        /// Every step a scenario can hold. The daemon gives each its body in one exhaustive
        /// switch, so a step without work cannot be added by mistake.
        public enum Name: String, CaseIterable, Sendable {
            case config, bus, bluez, adapter
            case connectKnown = "connectKnownSpeaker"
            case scanAndPick, soundfont, audioBackend, playbackReady
        }

        public static let config = Name.config.rawValue
        public static let bus = Name.bus.rawValue
        public static let bluez = Name.bluez.rawValue
        public static let adapter = Name.adapter.rawValue
        public static let connectKnown = Name.connectKnown.rawValue
        public static let scanAndPick = Name.scanAndPick.rawValue
        public static let soundfont = Name.soundfont.rawValue
        public static let audioBackend = Name.audioBackend.rawValue
        public static let playbackReady = Name.playbackReady.rawValue
    }

    /// What decides the graph.
    public struct Situation: Equatable, Sendable {
        /// The state file lists at least one speaker.
        public var hasKnownSpeakers: Bool
        /// `auto_pick = yes`: scan-and-pick needs no user.
        public var autoPick: Bool
        /// A request (D-Bus activation by `composer-cli play`) is already waiting.
        public var requestWaiting: Bool

        public init(hasKnownSpeakers: Bool, autoPick: Bool, requestWaiting: Bool) {
            self.hasKnownSpeakers = hasKnownSpeakers
            self.autoPick = autoPick
            self.requestWaiting = requestWaiting
        }
    }

    /// Scenario names as shown in the timeline.
    public enum Name {
        public static let regular = "regular"
        public static let firstRun = "first run"
        public static let launchedByRequest = "launched by request"
    }

    public static func scenario(for situation: Situation) -> StartupScenario {
        if situation.requestWaiting { return launchedByRequest(hasKnownSpeakers: situation.hasKnownSpeakers, autoPick: situation.autoPick) }
        return situation.hasKnownSpeakers ? regular : firstRun(autoPick: situation.autoPick)
    }

    /// Known speaker: connect it, then load the soundfont politely while the connection comes
    /// up; playback ready when both are done.
    public static var regular: StartupScenario {
        StartupScenario(Name.regular, steps: common + [
            StartupStep(Step.connectKnown, after: [Step.adapter], .optional, timeout: .seconds(8)),
            StartupStep(Step.soundfont, after: [Step.bus], .optional, timeout: .seconds(10)),
            StartupStep(Step.playbackReady, after: [Step.connectKnown, Step.soundfont, Step.audioBackend], .optional),
        ])
    }

    /// No known speaker: scan-and-pick. With auto-pick the picked speaker is connected and
    /// playback becomes ready; without, start-up ends waiting for the user (no budget applies:
    /// a person is involved), while the API keeps answering. The soundfont loads politely once
    /// READY=1 is out: there is no `Connect` to let go first, and a scan takes seconds.
    public static func firstRun(autoPick: Bool) -> StartupScenario {
        var steps = common + [
            StartupStep(Step.scanAndPick, after: [Step.adapter], .optional, timeout: .seconds(30)),
            StartupStep(Step.soundfont, after: [Step.bus], .optional, timeout: .seconds(10)),
        ]
        if autoPick {
            steps.append(StartupStep(Step.playbackReady, after: [Step.scanAndPick, Step.soundfont, Step.audioBackend], .optional))
        }
        return StartupScenario(Name.firstRun, steps: steps)
    }

    /// A play request is waiting in the readiness gate: the soundfont is required (the request
    /// cannot be served without it), everything else as in the regular or first run; it still
    /// lets the `Connect` go first, as the speaker is the slower half of serving the request.
    ///
    /// A first run without `auto_pick` ends, as `firstRun(autoPick: false)` does, waiting for the
    /// person to pick: no `playbackReady` step, so their time at the picker is not start-up's.
    public static func launchedByRequest(hasKnownSpeakers: Bool, autoPick: Bool = true) -> StartupScenario {
        let speakerStep = hasKnownSpeakers
            ? StartupStep(Step.connectKnown, after: [Step.adapter], .optional, timeout: .seconds(8))
            : StartupStep(Step.scanAndPick, after: [Step.adapter], .optional, timeout: .seconds(30))
        var steps = common + [speakerStep, StartupStep(Step.soundfont, after: [Step.bus], .required, timeout: .seconds(10))]
        if hasKnownSpeakers || autoPick {
            steps.append(StartupStep(Step.playbackReady, after: [speakerStep.name, Step.soundfont, Step.audioBackend], .optional))
        }
        return StartupScenario(Name.launchedByRequest, steps: steps)
    }

    /// The steps every scenario shares; `bluez` and `adapter` abort the sequence when missing.
    static var common: [StartupStep] {
        [
            StartupStep(Step.config),
            StartupStep(Step.bus, after: [Step.config], timeout: .seconds(5)),
            StartupStep(Step.bluez, after: [Step.bus], timeout: .seconds(5)),
            StartupStep(Step.adapter, after: [Step.bluez], timeout: .seconds(5)),
            StartupStep(Step.audioBackend, after: [Step.config], .optional, timeout: .seconds(5)),
        ]
    }

    /// Whether the scenario's soundfont step waits for the speaker step to issue its `Connect`
    /// before loading (there is a known speaker to connect), rather than only for READY=1.
    public static func soundfontWaitsForConnect(in scenario: StartupScenario) -> Bool {
        scenario.steps.contains { $0.name == Step.connectKnown }
    }

    /// Whether a scenario runs without user input, so the 3 s budget applies.
    public static func budget(for scenario: StartupScenario) -> Duration? {
        scenario.steps.contains { $0.name == Step.playbackReady } ? .seconds(3) : nil
    }
}

extension StartupReport {
    /// The `composer-cli startup` form of a sequencer's timeline.
    public init(_ timeline: StartupTimeline) {
        self.init(
            scenario: timeline.scenario,
            operations: timeline.operations.map {
                .init(name: $0.name, startMs: $0.startMs, endMs: $0.endMs, outcome: $0.outcome.kind, reason: $0.outcome.reason)
            },
            criticalPath: timeline.criticalPath)
    }
}
