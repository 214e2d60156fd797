import AudioPath
import BlueZ
import Logging
import PlaybackService

/// The daemon's own decisions, in one synchronous step: where it is in its life (starting,
/// running, the compatibility gate closed, stopping), what each BlueZ event does to that gate and
/// which of the link's and scan's owners hear it, what a change of the link means (said once:
/// connected and why, or reconnected; the audio path followed anew; the speaker remembered), which
/// audio-path report counts, and readiness itself (``ReadinessTracking``, folded in: the gate's
/// level, the player's reason, the status). ``SpeakerdDaemon`` feeds it and runs the effects.
///
/// The link (``LinkCore``), the player (``PlayerCore``), the speaker's care, scans and the state
/// file decide in values of their own, run by their owners; this one holds what was the
/// reducer's alone.
struct DaemonCore: Sendable {
    enum Lifecycle: Equatable, Sendable {
        case idle
        case starting
        /// Start-up finished (or is waiting for the user's pick).
        case running
        /// The compatibility gate closed; waiting for the condition to clear.
        case blocked(CompatibilityProblem)
        case stopping
        case stopped
    }

    enum Event: Sendable {
        /// `start()`: the daemon begins (once).
        case start
        /// A start-up run begins, or ends (the daemon runs unless the gate closed meanwhile).
        case startupBegins
        case startupEnded
        /// A start-up step found the compatibility gate must close.
        case blocked(CompatibilityProblem)
        /// A BlueZ event; `adapterInUse`: the name of the adapter speakerd uses, if any.
        case bluez(BlueZEvent, adapterInUse: String?)
        /// The link's owner reports a change; `followed`: the speaker whose audio path is
        /// followed now (nil: none), or nil when this daemon follows no audio path.
        case linkChanged(LinkSnapshot, followed: LinkSnapshot.Target??)
        /// The audio path's report; `latest`: it is of the follow under way (not one replaced).
        case audioPath(ReadinessInputs.AudioPath, latest: Bool)
        /// A new follow of the audio path began (its first report still to come).
        case pathFollowed
        /// Something the status shows changed elsewhere (the care, the state file).
        case statusChanged
        case systemSleep(starting: Bool)
        /// Our own bus connection dropped without us closing it.
        case busLost
        case playback(PlaybackSnapshot)
        /// The user made a choice (connect, disconnect, forget): what waited on an earlier one gives way.
        case userChose
        /// Something readiness is computed from was observed.
        case observed(ReadinessTracking.Input)
        /// SIGTERM or SIGINT: readiness changes from here on are not said.
        case stopRequested
        case windingDown
        case stopped
    }

    enum Effect: Sendable, Equatable {
        /// What follows from readiness (``ReadinessTracking``): the gate, the player, the status, a line.
        case readiness(ReadinessTracking.Effect)
        case log(Logger.Level, String)
        /// The adapter in use is gone (with it, or with bluetoothd).
        case forgetAdapter
        /// bluetoothd is gone: the link has no BlueZ to act through until start-up finds it again.
        case detachBlueZ
        /// The link's owner judges the event (the known speakers are read then).
        case observeLink(BlueZEvent)
        /// A scan under way announces what the event shows of its candidates.
        case announceCandidates(BlueZEvent)
        /// The gate's condition cleared: start-up runs again, in a task of its own.
        case runStartupAgain(reason: String)
        /// Follow the audio path to `target` (replacing any follow).
        case followAudioPath(LinkSnapshot.Target?)
        /// The speaker's care hears what is observed now (``speakerObservation``, when it runs).
        case observeSpeaker
        /// The link came up (the speaker's `link`-th): the state file records the connection,
        /// the care hears whether the speaker is new, the status is published.
        case remember(LinkSnapshot.Target, link: Int)
        /// The link's owner hears of logind's `PrepareForSleep`.
        case linkSleep(starting: Bool)
        /// The bus is lost: the service winds down and exits, for systemd to restart it.
        case reportBusLost
        /// The playback watch keeps what the player last said.
        case heardPlayback(PlaybackSnapshot)
        case publish
    }

    private(set) var lifecycle = Lifecycle.idle
    private(set) var tracking: ReadinessTracking
    /// The links counted as each came up, and the user's choices (see ``LinkHistory``).
    private(set) var linkHistory = LinkHistory()
    /// The adapter the configuration names, for the problem an adapter's loss closes the gate with.
    let configuredAdapter: String?

    init(tracking: ReadinessTracking, configuredAdapter: String?) {
        self.tracking = tracking
        self.configuredAdapter = configuredAdapter
    }

    var inputs: ReadinessInputs { tracking.inputs }
    var verdict: ReadinessInputs.Verdict { tracking.verdict }

    /// Shutting down or shut down: nothing new (a timer, a retry, a follower) may start then.
    var isWindingDown: Bool { lifecycle == .stopping || lifecycle == .stopped }

    var isBlocked: Bool { if case .blocked = lifecycle { true } else { false } }

    mutating func step(_ event: Event) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case .start:
            guard lifecycle == .idle else { break }
            lifecycle = .starting
        case .startupBegins:
            if !isWindingDown { lifecycle = .starting }
        case .startupEnded:
            if !isBlocked, !isWindingDown { lifecycle = .running }
        case let .blocked(problem):
            block(problem, into: &effects)
        case let .bluez(event, adapterInUse):
            bluez(event, adapterInUse: adapterInUse, into: &effects)
        case let .linkChanged(snapshot, followed):
            linkChanged(snapshot, followed: followed, into: &effects)
        case let .audioPath(state, latest):
            // A late report of a follow since replaced says nothing of the path followed now.
            guard latest else { break }
            observe(.audioPath(state), into: &effects)
            observeSpeaker(into: &effects)
        case .pathFollowed:
            // What was seen of the old target's path no longer holds until the new follower says,
            // except a problem with the output or the sound server itself: it is no less true for
            // another speaker, and hiding it (status flickering to "Connecting…") would let a
            // `play` wait instead of failing at once.
            if !inputs.audioPath.holdsForAnySpeaker { observe(.audioPath(.unknown), into: &effects) }
        case .statusChanged:
            effects.append(.publish)
        case let .systemSleep(starting):
            effects.append(.log(.info, starting ? "system is going to sleep" : "system resumed; reconnecting shortly"))
            effects.append(.linkSleep(starting: starting))
        case .busLost:
            // Once shutting down a late drop changes nothing.
            if !isWindingDown { effects.append(.reportBusLost) }
        case let .playback(snapshot):
            guard !isWindingDown else { break }
            effects.append(.heardPlayback(snapshot))
            effects.append(.publish)
        case .userChose:
            linkHistory.userChose()
        case let .observed(input):
            observe(input, into: &effects)
        case .stopRequested:
            _ = tracking.step(.stopRequested)
        case .windingDown:
            guard lifecycle != .stopped else { break }
            lifecycle = .stopping
            _ = tracking.step(.windingDown)
        case .stopped:
            lifecycle = .stopped
        }
        return effects
    }

    private mutating func observe(_ input: ReadinessTracking.Input, into effects: inout [Effect]) {
        effects += tracking.step(.observed(input)).map(Effect.readiness)
    }

    /// Closes the compatibility gate (not once winding down: nothing would reopen it then).
    private mutating func block(_ problem: CompatibilityProblem, into effects: inout [Effect]) {
        if !isWindingDown { lifecycle = .blocked(problem) }
        observe(.bluetooth(.blocked(problem)), into: &effects)
    }

    private mutating func bluez(_ event: BlueZEvent, adapterInUse: String?, into effects: inout [Effect]) {
        // Losing the adapter or bluetoothd is taken in before the link hears of it: the link going
        // down is its consequence, and readiness taken in between would blame the speaker
        // ("connecting to JBL Flip 5…") for what bluetoothd did.
        switch event {
        case .adapterRemoved(let name, _) where name == adapterInUse:
            effects.append(.forgetAdapter)
            block(.noAdapter(configured: configuredAdapter), into: &effects)
        case .bluetoothdVanished:
            effects.append(.forgetAdapter)
            effects.append(.detachBlueZ)
            block(.noBlueZ, into: &effects)
        default:
            break
        }
        effects.append(.observeLink(event))
        effects.append(.announceCandidates(event))
        switch event {
        case .adapterAdded(let added):
            if case .blocked(.noAdapter) = lifecycle { reopenGate(because: "adapter \(added.name) appeared", into: &effects) }
        case .adapterChanged(let changed):
            if case .blocked(.adapterBlocked) = lifecycle, !changed.isBlocked {
                reopenGate(because: "adapter \(changed.name) was unblocked", into: &effects)
            }
        case .bluetoothdRestarted, .bluetoothdAppeared:
            if isBlocked { reopenGate(because: "bluetoothd is back", into: &effects) }
        default:
            break
        }
    }

    /// The condition that closed the compatibility gate cleared: start-up runs again, in-process.
    private mutating func reopenGate(because reason: String, into effects: inout [Effect]) {
        guard isBlocked else { return }
        effects.append(.log(.notice, "\(reason); resuming start-up"))
        lifecycle = .starting
        effects.append(.runStartupAgain(reason: reason))
    }

    private mutating func linkChanged(_ snapshot: LinkSnapshot, followed: LinkSnapshot.Target??, into effects: inout [Effect]) {
        let previous = inputs.link
        guard snapshot.revision > previous.revision else { return }  // a late report of an older state
        let target = snapshot.target
        let cameUp = snapshot.connected && !(previous.connected && previous.target?.address == target?.address)
        // Said before what follows from it (ready to play), as it happened.
        if cameUp {
            let reconnect = linkHistory.cameUp(to: target)
            if let target {
                effects.append(.log(.info, reconnect ? "reconnected to \(target.name) (\(target.address))"
                    : "connected to \(target.name) (\(target.address)), \(target.why.spoken)"))
            }
        }
        observe(.link(snapshot), into: &effects)
        // A new speaker (or its new name) has its own path: what the old one's said no longer holds.
        if case let .some(followed) = followed, followed.map(FollowedSpeaker.init) != target.map(FollowedSpeaker.init) {
            effects.append(.followAudioPath(target))
        }
        observeSpeaker(into: &effects)
        // Whether it is new decides its first volume; the care hears of it after the write, so a
        // speaker's first link finds it known, to keep its first volume.
        if cameUp, let target { effects.append(.remember(target, link: linkHistory.linkUps)) }
    }

    private func observeSpeaker(into effects: inout [Effect]) {
        guard !isWindingDown else { return }
        effects.append(.observeSpeaker)
    }

    /// What the speaker's care is told is observed now.
    var speakerObservation: SpeakerCare.Observation {
        .init(target: inputs.link.target, connected: inputs.link.connected, audioPath: inputs.audioPath, link: linkHistory.linkUps)
    }
}

/// A followed speaker as the audio path tells targets apart: by address and name.
struct FollowedSpeaker: Equatable {
    let address: BluetoothAddress
    let name: String
    init(_ target: LinkSnapshot.Target) { (address, name) = (target.address, target.name) }
}

extension LinkSnapshot.Why {
    /// For the log line: why this speaker was connected.
    var spoken: String {
        switch self {
        case .lastKnown: "the last known speaker"
        case .otherKnown: "another known speaker"
        case .userPick: "as you asked"
        case .autoPick: "picked by scan (auto_pick)"
        case .inbound: "it connected by itself"
        }
    }
}
