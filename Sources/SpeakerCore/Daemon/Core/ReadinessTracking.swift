import Logging
import SpeakerdAPI

/// Readiness, derived in one synchronous step from what the daemon observes: the inputs
/// (``ReadinessInputs``), the verdict computed from them, and what follows from a change: the
/// gate's level (up or down), the reason told to the player, the status published, and the
/// journal's line (a repeated condition said once, ``ReadinessLogMemory``). Nothing else sets a
/// readiness level, so no event order can leave a level that no later event lifts.
struct ReadinessTracking: Equatable, Sendable {
    /// One observed input, as it is now.
    enum Input: Equatable, Sendable {
        case bus(Bool)
        case bluetooth(ReadinessInputs.Bluetooth)
        case link(LinkSnapshot)
        case choosing(ReadinessInputs.Choosing)
        case audioPath(ReadinessInputs.AudioPath)
        case soundfont(ReadinessInputs.Soundfont)
    }

    enum Event: Equatable, Sendable {
        case observed(Input)
        /// A stop was asked for: "stopping: … received" stays the last line about readiness.
        case stopRequested
        /// The daemon winds down: readiness may still move, but its reasons are not news.
        case windingDown
    }

    enum Effect: Equatable, Sendable {
        /// Move the readiness gate to `level` (up or down).
        case moveGate(to: DaemonReadiness)
        /// The player hears the reason (a song that can no longer wait fails with it) and follows
        /// the speaker (pausing or resuming a song), after the gate moved.
        case tellPlayer(waitingFor: NotReadyReason?)
        case publishStatus
        case log(Logger.Level, String)
    }

    private(set) var inputs: ReadinessInputs
    private(set) var verdict: ReadinessInputs.Verdict
    /// The level the gate was last moved to (it starts at `.started`).
    private(set) var gateLevel = DaemonReadiness.started
    private var log = ReadinessLogMemory()
    private var windingDown = false

    init(inputs: ReadinessInputs) {
        self.inputs = inputs
        verdict = inputs.verdict
    }

    /// Whether a stop was asked for.
    var isMuted: Bool { log.isMuted }

    mutating func step(_ event: Event) -> [Effect] {
        switch event {
        case .stopRequested:
            log.mute()
            return []
        case .windingDown:
            windingDown = true
            return []
        case .observed(let input):
            return observed(input)
        }
    }

    private mutating func observed(_ input: Input) -> [Effect] {
        let before = verdict
        switch input {
        case .bus(let up): inputs.bus = up
        case .bluetooth(let bluetooth): inputs.bluetooth = bluetooth
        case .link(let link): inputs.link = link
        case .choosing(let choosing): inputs.choosing = choosing
        case .audioPath(let path): inputs.audioPath = path
        case .soundfont(let soundfont): inputs.soundfont = soundfont
        }
        let after = inputs.verdict
        verdict = after
        var effects: [Effect] = []
        if after.level != gateLevel {
            gateLevel = after.level
            effects.append(.moveGate(to: after.level))
        }
        if before != after, let line = line(from: before, to: after) { effects.append(line) }
        if before.waitingFor != after.waitingFor || (before.level == .playbackReady) != (after.level == .playbackReady) {
            effects.append(.tellPlayer(waitingFor: after.waitingFor))
        }
        effects.append(.publishStatus)
        return effects
    }

    /// The journal's line for a verdict that changed: ready, on which speaker and through what,
    /// or the new reason, once per condition.
    private mutating func line(from before: ReadinessInputs.Verdict, to after: ReadinessInputs.Verdict) -> Effect? {
        if log.isMuted { return nil }
        let target = inputs.link.target
        if after.level == .playbackReady, let target {
            log.forget()
            let path = if case .ready(let route) = inputs.audioPath { " through \(route)" } else { "" }
            return .log(.info, "ready to play on \(target.name) (\(target.address))\(path)")
        }
        guard let reason = after.waitingFor, reason != before.waitingFor, !windingDown,
              log.shouldSay(reason, about: target?.address) else { return nil }
        let speaker = target.map { " on \($0.name) (\($0.address))" } ?? ""
        return .log(.notice, "not ready to play\(speaker): \(reason.message)")
    }
}
