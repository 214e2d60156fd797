import BlueZ
import Configuration

/// The speaker link's decisions, in one synchronous step: which speaker is the target and why,
/// what each BlueZ report means for its link, the user's hold, the speakers the user forgot,
/// whether an attempt may send its `Connect` and whether its success is the truth, and what is
/// published and logged. The target's ``ReconnectDecision`` is inside it: when to try again, which
/// attempts start and who hears each result, the one retry timer. ``SpeakerLink`` feeds it and
/// runs the effects: its attempts through the operation queue, the retry timer, BlueZ's answers,
/// the deliveries.
///
/// A connection that appears by any path (our `Connect`, the user's, the speaker connecting
/// inbound, a late success after a step gave up) is the same event here: the link is up.
public struct LinkCore: Sendable {
    public typealias Decision = ReconnectDecision<ErasedClock>
    public typealias AttemptResult = Decision.AttemptResult
    public typealias ReconnectChange = Decision.Change
    public typealias PolicyEvent = ReconnectPolicy<ErasedClock>.Event
    public typealias Reply = Decision.Reply

    /// One attempt of one target's reconnects: a target chosen anew starts its numbering again,
    /// so an attempt of the old one ending late is told apart.
    public struct AttemptID: Hashable, Sendable {
        let target: Int
        let attempt: Decision.Attempt
    }

    public enum Event: Sendable, Equatable {
        /// Make `address` the speaker to keep (start-up, the user, a scan's pick).
        case choose(BluetoothAddress, name: String, why: LinkSnapshot.Why)
        /// An attempt at the target is asked for now and awaited: the user's `connect` (which
        /// lifts their hold) or start-up's (which does not overrule it); `reply` hears the result.
        case connectAsked(byUser: Bool, reply: Reply)
        /// The caller of `reply` stopped waiting: its attempt is cancelled.
        case callerLeft(Reply)
        /// The user's `disconnect`.
        case userDisconnect
        /// The user forgot `address`.
        case forget(BluetoothAddress)
        /// What the reconnect policy hears from outside the link (a request waiting, logind, boot).
        case policy(PolicyEvent)
        /// A BlueZ report. `known`: the remembered speakers; `attempting`: the speaker an attempt
        /// of ours is connecting or pairing now (a link up for it may be the pairing's own).
        case bluez(BlueZEvent, known: [KnownSpeaker], attempting: BluetoothAddress?)
        /// BlueZ's answer to `askPaired` (nil: it does not know the device, or did not answer).
        case pairedAnswer(BluetoothAddress, paired: Bool?)
        /// An attempt the reconnects started has ended (its caller, if any, hears `result`).
        case attemptEnded(AttemptID, AttemptResult)
        /// The retry timer armed for `deadline` fired.
        case retryDue(deadline: ErasedClock.Instant, target: Int)
        /// An attempt at `address` failed for `reason` (logged once per speaker and reason).
        case attemptFailed(BluetoothAddress, reason: String)
        /// An attempt returned `result`; `dropsBefore` is `drops` when it began.
        case attemptReturned(BluetoothAddress, AttemptResult, dropsBefore: Int)
        /// BlueZ's answer to `confirmLink`.
        case linkConfirmed(BluetoothAddress, connected: Bool)
        /// Our `Disconnect` of `address` returned: the link is down.
        case disconnectReturned(BluetoothAddress)
        /// The daemon stops: no target is chosen, no attempt starts, BlueZ is no longer followed.
        case stop
    }

    public enum Effect: Sendable, Equatable {
        /// Run one attempt at `address` (joining one under way); its end comes back as `attemptEnded`.
        case runAttempt(AttemptID, at: BluetoothAddress)
        /// Cancel that attempt (it still ends, and is then ignored).
        case stopAttempt(AttemptID)
        /// Arm the retry timer for `deadline`, replacing any other; its firing is `retryDue`.
        case armRetry(deadline: ErasedClock.Instant, target: Int)
        case disarmRetry
        /// The caller of `reply` hears `result`.
        case answer(Reply, AttemptResult)
        /// Hand `snapshot` to the daemon after every earlier one, and wait until it is taken in.
        case publish(LinkSnapshot)
        /// A second report of what was already published: wait until the delivery of `revision`
        /// is taken in, so its caller never runs ahead of what the daemon knows.
        case catchUp(revision: Int)
        /// Ask BlueZ whether `address` is paired; the answer comes back as `pairedAnswer`.
        case askPaired(BluetoothAddress)
        /// Ask BlueZ whether `address` is connected; the answer comes back as `linkConfirmed`.
        case confirmLink(BluetoothAddress)
        /// The link to `address` is up: an attempt at it waiting on its `Connect` may end.
        case linkCameUp(BluetoothAddress)
        /// Stop the connect under way: its operation is cancelled, so it sends nothing more.
        case cancelConnect
        /// End whatever link BlueZ has to `address` with its `Disconnect` (one we know of, one we
        /// have not heard of yet, or one a `Connect` of ours on its way would bring up).
        case disconnect(BluetoothAddress)
        /// BlueZ reported the target disconnected: a user's disconnect waiting for it may return.
        case disconnectReported
        /// The attempt's own run hears whether its result stands (`attemptReturned`).
        case answerAttempt(AttemptResult)
        case log(String)
    }

    private enum Lifecycle: Sendable, Equatable { case following, stopped }

    public private(set) var snapshot = LinkSnapshot.none
    /// The user disconnected the target: no attempt of ours until they ask, or the target changes.
    public private(set) var heldByUser = false
    /// Speakers the user forgot. A choice resting on the remembered speakers (start-up's known
    /// speakers, a known speaker connecting by itself) may rest on a list read before the forget
    /// reached the state file, or on a BlueZ report older than the forget: it never makes a
    /// forgotten speaker the target again. A choice made afresh (the user's `connect`, a scan's
    /// auto-pick) does, and lifts this.
    public private(set) var forgotten: Set<BluetoothAddress> = []
    /// Counts the link going down (or BlueZ saying so), so an attempt can tell whether its
    /// success is still the truth when it returns.
    public private(set) var drops = 0
    /// BlueZ's "disconnected" reports for the target so far (a user's disconnect waits for one).
    public private(set) var disconnectsSeen = 0
    /// The last failed attempt logged, so retries failing alike are quiet.
    private var lastFailureLogged: String?
    private var lifecycle = Lifecycle.following
    /// The current target's reconnects (nil: no target), numbered so a late end of an old
    /// target's attempt or timer is told apart.
    public private(set) var reconnect: Decision?
    private(set) var reconnectNumber = 0
    /// The policy each new target starts with.
    private let policy: ReconnectPolicy<ErasedClock>

    public init(policy: ReconnectPolicy<ErasedClock>) {
        self.policy = policy
    }

    public var isStopped: Bool { lifecycle == .stopped }

    /// Why an attempt may not start now, or its result not stand (nil: it may). `address`: the
    /// speaker an attempt under way is for; nil for a caller asking afresh.
    public func refusal(connectingTo address: BluetoothAddress? = nil) -> String? {
        if lifecycle == .stopped { return "speakerd is stopping" }
        if heldByUser { return address == nil ? "you disconnected it; 'composer-cli connect' reconnects" : "you disconnected it" }
        guard let target = snapshot.target else { return "no speaker chosen" }
        if let address, address != target.address { return "another speaker was chosen" }
        return nil
    }

    public mutating func step(_ event: Event, now: ErasedClock.Instant) -> [Effect] {
        guard lifecycle == .following else { return refusedAfterStop(event) }
        self.now = now
        var effects: [Effect] = []
        switch event {
        case .choose(let address, let name, let why):
            choose(address, name: name, why: why, into: &effects)
        case let .connectAsked(byUser, reply):
            if byUser, heldByUser {
                heldByUser = false
                // Asked again before our Disconnect had ended the link: it is the user's again.
                if snapshot.connected, snapshot.activity != .idle {
                    snapshot.activity = .idle
                    publish(into: &effects)
                }
            }
            if let refusal = refusal() {
                effects.append(.answer(reply, .failed(reason: refusal)))
            } else if snapshot.connected {
                feedReconnect(.policy(.connected), into: &effects)
                effects.append(.catchUp(revision: snapshot.revision))  // the daemon knows it before the caller hears it
                effects.append(.answer(reply, .connected))
            } else {
                feedReconnect(.connectNow(reply), into: &effects)
            }
        case let .callerLeft(reply):
            feedReconnect(.callerLeft(reply), into: &effects)
        case .userDisconnect:
            guard let target = snapshot.target else { break }
            heldByUser = true
            feedReconnect(.policy(.userDisconnected), into: &effects)
            effects.append(.cancelConnect)
            if snapshot.activity != .heldByUser {
                snapshot.activity = .heldByUser
                publish(into: &effects)
            }
            // Asked of BlueZ whatever the link shows: BlueZ may have a link we have not heard of
            // (the speaker connected by itself before it became the target, its report still on
            // its way), or a Connect of ours may be out. Its "not connected" is the wish met.
            effects.append(.disconnect(target.address))
        case .forget(let address):
            forgotten.insert(address)
            guard snapshot.target?.address == address else { break }
            // A hold is on the speaker the user disconnected: with it forgotten nothing is held,
            // so start-up running again may connect another known speaker, as a fresh start would.
            heldByUser = false
            snapshot.target = nil
            snapshot.connected = false
            snapshot.servicesResolved = nil
            snapshot.activity = .idle
            replaceReconnect(targetCleared: true, because: "you forgot it", into: &effects)
            publish(into: &effects)
        case .policy(let event):
            feedReconnect(.policy(event), into: &effects)
        case .bluez(let event, let known, let attempting):
            observe(event, known: known, attempting: attempting, into: &effects)
        case .pairedAnswer(let address, let paired):
            // A link BlueZ says is unpaired is the one pairing brought up, not the speaker connected.
            if paired != false, snapshot.target?.address == address { linkUp(into: &effects) }
        case let .attemptEnded(id, result):
            guard id.target == reconnectNumber else { break }  // an old target's attempt
            feedReconnect(.attemptEnded(id.attempt, result), into: &effects)
        case let .retryDue(deadline, target):
            guard target == reconnectNumber else { break }
            feedReconnect(.retryDue(deadline: deadline), into: &effects)
        case .attemptFailed(let address, let reason):
            let failure = "\(address) \(reason)"
            guard failure != lastFailureLogged else { break }
            lastFailureLogged = failure
            effects.append(.log("connecting \(snapshot.target?.name ?? "the speaker") (\(address)) failed: \(reason)"))
        case .attemptReturned(let address, let result, let dropsBefore):
            if result == .connected, drops != dropsBefore, refusal(connectingTo: address) == nil {
                // BlueZ reported the link down while our Connect was under way: its success may
                // be older than that, so BlueZ's own view decides.
                effects.append(.confirmLink(address))
            } else {
                settle(address, result, into: &effects)
            }
        case .linkConfirmed(let address, let connected):
            settle(address, connected ? .connected : .failed(reason: "the link dropped again at once"), into: &effects)
        case .disconnectReturned(let address):
            if snapshot.target?.address == address { linkDown(into: &effects) }
        case .stop:
            replaceReconnect(targetCleared: false, into: &effects)
            lifecycle = .stopped
        }
        return effects
    }

    /// An attempt at `address` ended with `result`: what its run hears, and a success is the link
    /// up. The user disconnected (or another speaker was chosen) while it was under way: its
    /// success is older than that wish, and BlueZ's view may not show it yet.
    private mutating func settle(_ address: BluetoothAddress, _ result: AttemptResult, into effects: inout [Effect]) {
        if let refusal = refusal(connectingTo: address) {
            effects.append(.answerAttempt(.failed(reason: refusal)))
            return
        }
        if result == .connected { linkUp(into: &effects) }
        effects.append(.answerAttempt(result))
    }

    /// The instant of the step under way (the reconnect decision's clock).
    private var now = ErasedClock.Instant(offset: .zero)

    /// Feeds the target's reconnect decision and carries its effects into the link's: what it
    /// tells becomes the link's activity at once.
    private mutating func feedReconnect(_ event: Decision.Event, tells: Bool = true, failingWith reason: String? = nil,
                                        into effects: inout [Effect]) {
        guard var decision = reconnect else {
            if case let .connectNow(reply) = event { effects.append(.answer(reply, .failed(reason: "no speaker chosen"))) }
            return
        }
        let decided = decision.step(event, now: now)
        reconnect = decision
        // An attempt starts before what the decision tells is published: its Connect is start-up's
        // critical path, and the daemon taking in "connecting…" need not hold it back.
        for case let .start(attempt) in decided {
            if let target = snapshot.target?.address {
                effects.append(.runAttempt(AttemptID(target: reconnectNumber, attempt: attempt), at: target))
            }
        }
        for effect in decided {
            switch effect {
            case let .tell(change): if tells { reconnectChanged(change, into: &effects) }
            case .start:
                break
            case let .cancel(attempt): effects.append(.stopAttempt(AttemptID(target: reconnectNumber, attempt: attempt)))
            case let .arm(deadline): effects.append(.armRetry(deadline: deadline, target: reconnectNumber))
            case .cancelTimer: effects.append(.disarmRetry)
            case let .answer(reply, result):
                effects.append(.answer(reply, reason.map { .failed(reason: $0) } ?? result))
            case .endChanges: break
            }
        }
    }

    /// Lets go of the current target's reconnects (its attempts cancelled, its callers answered
    /// with `because`, or that speakerd is stopping, its timer disarmed) and starts the next
    /// target's afresh, if there is one by then. `targetCleared`: the old policy hears that first.
    private mutating func replaceReconnect(targetCleared: Bool, because reason: String? = nil, into effects: inout [Effect]) {
        if targetCleared { feedReconnect(.policy(.targetCleared), tells: false, into: &effects) }
        feedReconnect(.stop, tells: false, failingWith: reason, into: &effects)
        reconnect = nil
        reconnectNumber += 1
    }

    /// The new target's reconnects, once it is in place.
    private mutating func startReconnect() {
        reconnect = Decision(policy: policy)
    }

    /// After the stop only a caller is answered; nothing else moves.
    private func refusedAfterStop(_ event: Event) -> [Effect] {
        switch event {
        case .attemptReturned, .linkConfirmed: [.answerAttempt(.failed(reason: "speakerd is stopping"))]
        case let .connectAsked(_, reply): [.answer(reply, .failed(reason: "speakerd is stopping"))]
        default: []
        }
    }

    private mutating func choose(_ address: BluetoothAddress, name: String, why: LinkSnapshot.Why, into effects: inout [Effect]) {
        switch why {
        case .userPick, .autoPick: forgotten.remove(address)
        case .lastKnown, .otherKnown, .inbound: guard !forgotten.contains(address) else { return }
        }
        if snapshot.target?.address == address {
            snapshot.target = .init(address: address, name: name, why: why)
            publish(into: &effects)
            return
        }
        replaceReconnect(targetCleared: false, because: snapshot.target.map { "\(name) (\(address)) was chosen instead of \($0.name)" },
                         into: &effects)
        heldByUser = false
        snapshot.target = .init(address: address, name: name, why: why)
        snapshot.servicesResolved = nil
        snapshot.connected = false
        snapshot.activity = .idle
        startReconnect()
        publish(into: &effects)
    }

    private mutating func observe(_ event: BlueZEvent, known: [KnownSpeaker], attempting: BluetoothAddress?,
                                  into effects: inout [Effect]) {
        let target = snapshot.target?.address
        switch event {
        case .connected(let address) where address == target:
            // BlueZ is asked only when the link may be a pairing's (see `mayBePairingLink`).
            if Self.mayBePairingLink(address, known: known, attempting: attempting) {
                effects.append(.askPaired(address))
            } else {
                linkUp(into: &effects)
            }
        case .connected(let address):
            // A known speaker connecting by itself becomes the target when none is connected.
            guard !snapshot.connected, let speaker = known.first(where: { $0.address == address }) else { return }
            choose(address, name: speaker.name, why: .inbound, into: &effects)
            guard snapshot.target?.address == address else { return }  // not taken: the user forgot it
            linkUp(into: &effects)
        case .disconnected(let address, let reason) where address == target:
            // The user's own disconnect is said once, by the daemon ("… as asked").
            if !heldByUser { effects.append(.log("\(snapshot.target?.name ?? "the speaker") (\(address)) disconnected: \(reason)")) }
            drops += 1
            disconnectsSeen += 1
            linkDown(into: &effects)
            feedReconnect(.policy(.linkLost(Self.linkLossReason(reason))), into: &effects)
            effects.append(.disconnectReported)
        case .deviceAdded(let device) where device.address == target:
            // A new object (bluetoothd restarted, the adapter came back) starts from BlueZ's state.
            if device.connected {
                linkUp(into: &effects)
                servicesResolved(device, into: &effects)
            } else {
                linkDown(into: &effects)
                feedReconnect(.policy(.deviceSeen), into: &effects)
            }
        case .deviceChanged(let device) where device.address == target:
            if device.connected {
                guard !(device.paired == false && Self.mayBePairingLink(device.address, known: known, attempting: attempting)) else { return }
                linkUp(into: &effects)
                servicesResolved(device, into: &effects)
            } else {
                feedReconnect(.policy(.deviceSeen), into: &effects)  // in reach again
            }
        case .deviceRemoved(let address) where address == target:
            linkDown(into: &effects)
        case .adapterChanged(let adapter) where adapter.powered:
            feedReconnect(.policy(.deviceSeen), into: &effects)
        case .adapterRemoved, .bluetoothdVanished:
            // Every link went with it; the policy retries once BlueZ is back (start-up re-runs).
            linkDown(into: &effects)
        default:
            break
        }
    }

    /// Whether a link up for `address` could be only the one an attempt pairs over, so BlueZ's
    /// word on `Paired` is needed. To pair, bluetoothd brings a link up first (`Connected` true
    /// while `Paired` is false) and drops it if the speaker refuses; the speaker is connected,
    /// and remembered, only once paired. Not only while our attempt is under way: BlueZ's
    /// signals reach us by another path than its answers, so the "connected" of a refused
    /// pairing can be read after the attempt failed. A speaker not remembered is only ever one
    /// an attempt pairs.
    static func mayBePairingLink(_ address: BluetoothAddress, known: [KnownSpeaker], attempting: BluetoothAddress?) -> Bool {
        attempting == address || !known.contains { $0.address == address }
    }

    /// The target's link is up. Reported by several paths at once (our `Connect` returning,
    /// BlueZ's signal): the second waits for the first's delivery.
    private mutating func linkUp(into effects: inout [Effect]) {
        guard let target = snapshot.target else { return }
        guard !snapshot.connected else {
            effects.append(.catchUp(revision: snapshot.revision))
            return
        }
        effects.append(.linkCameUp(target.address))
        snapshot.connected = true
        snapshot.activity = .idle
        lastFailureLogged = nil
        // The reconnects hear of the link before the daemon does; not while the user holds: a
        // link that came up by itself (the speaker's own button) leaves their word standing, so
        // its next drop is not retried either.
        if !heldByUser { feedReconnect(.policy(.connected), into: &effects) }
        publish(into: &effects)
    }

    /// The target's link is down. Reported by several paths too (BlueZ's signal, our
    /// `Disconnect` returning, the device or adapter vanishing), as in `linkUp`.
    private mutating func linkDown(into effects: inout [Effect]) {
        guard snapshot.connected else {
            effects.append(.catchUp(revision: snapshot.revision))
            return
        }
        drops += 1
        snapshot.connected = false
        if snapshot.servicesResolved != nil { snapshot.servicesResolved = false }  // resolved again on the next link
        snapshot.activity = heldByUser ? .heldByUser : .idle
        publish(into: &effects)
    }

    /// BlueZ's `ServicesResolved` for the connected target: followed once BlueZ has shown it
    /// true for this speaker (before that the property says nothing: see `LinkSnapshot`).
    private mutating func servicesResolved(_ device: Device, into effects: inout [Effect]) {
        guard device.servicesResolved || snapshot.servicesResolved != nil else { return }
        guard snapshot.servicesResolved != device.servicesResolved else { return }
        snapshot.servicesResolved = device.servicesResolved
        publish(into: &effects)
    }

    /// What the reconnect decision says becomes the link's activity; while the user holds, only
    /// the hold is shown, and a connected link is doing nothing.
    private mutating func reconnectChanged(_ change: ReconnectChange, into effects: inout [Effect]) {
        if heldByUser, change != .holding { return }
        let activity: LinkSnapshot.Activity
        switch change {
        case .attemptFailed: return
        case _ where snapshot.connected && !heldByUser: activity = .idle
        case .holding: activity = .heldByUser
        case .attempting: activity = .connecting
        case .connected: activity = .idle
        case .retryScheduled(let delay): activity = .retrying(in: delay)
        case .needsPairing(let reason): activity = .needsPairing(reason: reason)
        }
        guard activity != snapshot.activity else { return }
        snapshot.activity = activity
        publish(into: &effects)
    }

    private mutating func publish(into effects: inout [Effect]) {
        snapshot.revision += 1
        effects.append(.publish(snapshot))
    }

    static func linkLossReason(_ reason: DisconnectReason) -> ReconnectPolicy<ErasedClock>.LinkLossReason {
        switch reason {
        case .timeout: .timeout
        case .remote, .authentication: .remote
        case .local: .local
        case .suspend, .unknown, .unspecified, .other: .unspecified
        }
    }
}
