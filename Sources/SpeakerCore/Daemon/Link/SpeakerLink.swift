import AsyncSignals
import BlueZ
import Logging
import Readiness
import Configuration
import Synchronization

/// The one owner of the speaker link, for the daemon's whole life.
///
/// It knows which speaker is the target and why, whether BlueZ says that speaker is connected,
/// and what it is doing about it (connecting, backing off until a given moment, held by the
/// user). Start-up's connect and scan steps, the user's `connect`/`disconnect`/`forget`, and
/// BlueZ's signals all come here, so a connection that appears by any path (our `Connect`, the
/// user's, the speaker connecting inbound, a late success after a step gave up) is the same
/// event: the link is connected, and readiness follows it.
///
/// Decisions about *when* to try again belong to ``ReconnectPolicy`` (carried out by a
/// ``ReconnectController`` per target); each attempt runs through the daemon's
/// ``AsyncOperationQueue`` (one at a time, timed out, cancellable, and holding the sleep
/// delay lock while it runs). Every change is handed to `onChange` in order.
public actor SpeakerLink {
    public typealias AttemptResult = ReconnectController<ErasedClock>.AttemptResult

    private let clock: ErasedClock
    private let reconnectCap: Duration
    private let operations: AsyncOperationQueue
    private let logger: Logger
    private var onChange: (@Sendable (LinkSnapshot) async -> Void)?
    private var bluez: (any BlueZClient)?

    /// Following the world until `shutdown()`; after it no target is chosen, no attempt starts
    /// and BlueZ events are ignored, so nothing new is left running behind a stopped daemon.
    private enum Lifecycle { case following, stopped }

    private var lifecycle = Lifecycle.following
    private(set) var snapshot = LinkSnapshot.none
    private var reconnect: ReconnectController<ErasedClock>?
    private var reconnectWatcher: Task<Void, Never>?
    /// The user disconnected the target: no attempt of ours until they ask (the policy says the
    /// same, but its timers and change stream may still be catching up).
    private var heldByUser = false
    /// Counts the link going down (or BlueZ saying so), so an attempt can tell whether its
    /// success is still the truth when it returns.
    private var drops = 0
    /// The newest change being handed to `onChange`.
    private var lastDelivery: Task<Void, Never>?
    /// BlueZ's "disconnected" reports for the target handled so far, and the user's disconnects
    /// waiting for theirs (see `userDisconnect`).
    private var disconnectsSeen = 0
    private var disconnectWaiters: [OneShotSignal<Void, Never>] = []
    /// The last failed attempt logged ("ADDRESS reason"), so retries failing alike are quiet.
    private var lastFailureLogged: String?
    /// The attempt under way for the current target, with the count of drops when it began;
    /// a second ask joins it (and judges its success against the same count).
    private var inFlight: (address: BluetoothAddress, task: Task<AttemptResult, Never>, dropsBefore: Int)?
    /// The connect operation whose work got past the user's hold (see `mayConnect`): from then
    /// on its Connect (or Pair) may be on its way to BlueZ, or BlueZ already working on it. Kept
    /// after a successful Connect until the link is up, as the link is then BlueZ's alone.
    private var connecting: OperationID?
    /// The connect attempt under way, resolved by `linkUp` when its speaker's link comes up
    /// before its operation ends (the speaker connected by itself while we paged it).
    private var attemptLinkUp: (address: BluetoothAddress, signal: OneShotSignal<Void, Never>)?
    /// Speakers the user forgot. A choice resting on the remembered speakers (start-up's known
    /// speakers, a known speaker connecting by itself) may rest on a list read before the
    /// forget reached the state file, or on BlueZ's report of a connection older than the
    /// forget: it never makes a forgotten speaker the target again. A choice made afresh (the
    /// user's `connect`, a scan's auto-pick) does, and lifts this.
    private var forgotten: Set<BluetoothAddress> = []

    public init(clock: any Clock<Duration>, reconnectCap: Duration, operations: AsyncOperationQueue, logger: Logger) {
        self.clock = ErasedClock(clock)
        self.reconnectCap = reconnectCap
        self.operations = operations
        self.logger = logger
    }

    /// Where every change goes (the daemon recomputes readiness from it).
    public func follow(_ onChange: @escaping @Sendable (LinkSnapshot) async -> Void) { self.onChange = onChange }

    /// The BlueZ client to act through (nil while bluetoothd is away).
    public func attach(_ bluez: (any BlueZClient)?) { self.bluez = bluez }

    /// Whether the user disconnected the target and has not asked to connect since.
    public var isHeldByUser: Bool { heldByUser }

    /// The reconnect policy's state for the current target (tests and diagnostics).
    public var reconnectState: ReconnectPolicy<ErasedClock>.State? {
        get async { await reconnect?.state }
    }

    // MARK: - Requests

    /// Makes `address` the speaker to keep. A new target gets a fresh reconnect policy and any
    /// attempt at the old one is cancelled; the same target keeps its policy (its name and
    /// reason may be refreshed). A speaker the user forgot is chosen again only afresh (see
    /// `forgotten`).
    public func choose(_ address: BluetoothAddress, name: String, why: LinkSnapshot.Why) async {
        guard lifecycle == .following else { return }
        switch why {
        case .userPick, .autoPick: forgotten.remove(address)
        case .lastKnown, .otherKnown, .inbound: guard !forgotten.contains(address) else { return }
        }
        if snapshot.target?.address == address {
            snapshot.target = .init(address: address, name: name, why: why)
            await changed()
            return
        }
        // The new target is in place before anything here suspends: a forget arriving
        // meanwhile finds it, and the old target's controller is stopped after.
        let previous = detachReconnect()
        heldByUser = false
        snapshot.target = .init(address: address, name: name, why: why)
        snapshot.servicesResolved = nil
        snapshot.connected = false
        snapshot.activity = .idle
        var policy = ReconnectPolicy<ErasedClock>(random: SystemRandomNumberGenerator(), cap: reconnectCap)
        policy.resumeDelay = .seconds(2)
        let controller = ReconnectController(policy: policy, clock: clock) { [weak self] in
            guard let self else { return .failed(reason: "speakerd is stopping") }
            return await self.attempt(address)
        }
        reconnect = controller
        reconnectWatcher = Task { [weak self] in
            for await change in controller.changes {
                await self?.reconnectChanged(change, address: address)
            }
        }
        await previous?.shutdown()
        await changed()
    }

    /// One attempt at the target now, awaited (lifts a user's hold; an attempt already under
    /// way is joined, never doubled).
    public func connectNow() async -> AttemptResult {
        heldByUser = false
        return await connectUnlessHeld()
    }

    /// One attempt now, unless the user disconnected the target (start-up's own attempts: a
    /// start-up run again after bluetoothd came back does not overrule the user).
    public func connectUnlessHeld() async -> AttemptResult {
        guard lifecycle == .following else { return .failed(reason: "speakerd is stopping") }
        guard !heldByUser else { return .failed(reason: "you disconnected it; 'composer-cli connect' reconnects") }
        guard let reconnect, snapshot.target != nil else { return .failed(reason: "no speaker chosen") }
        if snapshot.connected {
            await reconnect.handle(.connected)
            await lastDelivery?.value  // the daemon knows it before the caller hears it
            return .connected
        }
        return await reconnect.connectNow()
    }

    /// A person's request began waiting for the speaker: a speaker out of reach is tried now
    /// and every few seconds until `requestEnded()` (`ReconnectPolicy.Event.requestWaiting`);
    /// a user's disconnect still holds.
    public func requestWaiting() async {
        await reconnect?.handle(.requestWaiting)
    }

    /// The request that waited has its answer.
    public func requestEnded() async {
        await reconnect?.handle(.requestEnded)
    }

    /// The user's `disconnect`: nothing reconnects until they ask again, and once it returns no
    /// Connect of ours is left to reach BlueZ.
    ///
    /// A connect operation already past the hold when the user asked may have its Connect on
    /// the wire (or BlueZ already paging the speaker): it is cancelled, which sends nothing
    /// more, and our Disconnect then follows it on the same connection, so BlueZ ends whatever
    /// it started. Only stopping the attempt let that Connect land after the user's word.
    public func userDisconnect() async throws {
        guard let target = snapshot.target else { return }
        heldByUser = true
        await reconnect?.handle(.userDisconnected)
        let connectMayBeOut = await stopConnecting()
        cancelInFlight()
        snapshot.activity = .heldByUser
        await changed()
        let wasUp = snapshot.connected
        if wasUp || connectMayBeOut, let bluez {
            let seenBefore = disconnectsSeen
            // A speaker operation like the others: timed out, and holding the sleep delay lock.
            // "Not connected" is the user's wish already met (the link went, or never came up).
            let endedALink = OneShotSignal<Bool, Never>()
            let ticket = await operations.add("disconnect \(target.address)", group: "disconnect", timeout: .seconds(10)) { _ in
                do {
                    try await bluez.disconnect(target.address)
                    endedALink.succeed(true)
                } catch let error as BlueZClientError where error.bluezError?.kind == .notConnected {
                    endedALink.succeed(false)
                }
            }
            switch try await ticket.outcome() {
            case .ok: break
            case .failed(let reason), .skipped(let reason): throw SpeakerOperationFailure(operation: "Disconnect", reason: reason)
            case .timedOut: throw SpeakerOperationFailure(operation: "Disconnect", reason: "BlueZ did not answer within 10 s")
            case .cancelled: throw CancellationError()
            }
            await linkDown()  // our call returning is already the truth for status
            // BlueZ signals the link down before it answers, but the answer and its signals reach
            // us by different paths. The user's next step (often `connect` at once) must not
            // overtake that signal: taken in after a new link is up, it would read as a drop of
            // the new link. So this returns once BlueZ's own report is handled (bounded, in case
            // a BlueZ never sends it, or the link we ended was one we had not heard of yet).
            if disconnectsSeen == seenBefore, wasUp || endedALink.result != .success(false) {
                let reported = OneShotSignal<Void, Never>()
                disconnectWaiters.append(reported)
                _ = try? await reported.value(timeout: .seconds(2))
                disconnectWaiters.removeAll { $0 === reported }
            }
        }
    }

    /// No known speaker answered at start-up: keep trying the target in the background.
    public func unreachableAtBoot() async {
        await reconnect?.handle(.unreachableAtBoot)
    }

    /// The user forgot the speaker: nothing to keep connected any more, and nothing remembered
    /// brings it back (see `forgotten`). Returns whether it was the target and connected (the
    /// caller ends the link).
    public func forget(_ address: BluetoothAddress) async -> Bool {
        forgotten.insert(address)
        guard snapshot.target?.address == address else { return false }
        let wasConnected = snapshot.connected
        let previous = detachReconnect()
        // A hold is on the speaker the user disconnected: with it forgotten, nothing is held,
        // so start-up running again (bluetoothd or the adapter back) may connect another known
        // speaker, as speakerd started afresh would.
        heldByUser = false
        snapshot.target = nil
        snapshot.connected = false
        snapshot.servicesResolved = nil
        snapshot.activity = .idle
        await previous?.handle(.targetCleared)
        await previous?.shutdown()
        await changed()
        return wasConnected
    }

    /// logind's `PrepareForSleep`.
    public func systemSleep(starting: Bool) async {
        await reconnect?.handle(starting ? .preparingForSleep : .resumedFromSleep)
    }

    public func shutdown() async {
        lifecycle = .stopped
        await dropTarget()
        onChange = nil
    }

    // MARK: - Observing BlueZ

    /// Follows one BlueZ event. `known` are the remembered speakers: one of them connecting by
    /// itself becomes the target when there is none, or when the target is not connected.
    public func observe(_ event: BlueZEvent, known: [KnownSpeaker]) async {
        guard lifecycle == .following else { return }
        let target = snapshot.target?.address
        switch event {
        case .connected(let address) where address == target:
            // BlueZ is asked only while our own attempt for it is under way, or for a new speaker.
            if mayBePairingLink(address, known: known), (try? await bluez?.device(address))??.paired == false { return }
            await linkUp()
        case .connected(let address):
            // Said once, by the daemon: "connected to NAME (ADDRESS), it connected by itself".
            guard !snapshot.connected, let speaker = known.first(where: { $0.address == address }) else { return }
            await choose(address, name: speaker.name, why: .inbound)
            // Not taken (the user forgot it), or replaced while the choice was handed on.
            guard snapshot.target?.address == address else { return }
            await linkUp()
        case .disconnected(let address, let reason) where address == target:
            // The user's own disconnect is said once, by the daemon ("… as asked").
            if !heldByUser { logger.info("\(snapshot.target?.name ?? "the speaker") (\(address)) disconnected: \(reason)") }
            drops += 1
            disconnectsSeen += 1
            await linkDown()
            await reconnect?.handle(.linkLost(Self.linkLossReason(reason)))
            for waiter in disconnectWaiters { waiter.succeed(()) }
        case .deviceAdded(let device) where device.address == target:
            // A new object (bluetoothd restarted, the adapter came back) starts from BlueZ's state.
            if device.connected {
                await linkUp()
                await servicesResolved(device)
            } else {
                await linkDown()
                await reconnect?.handle(.deviceSeen)
            }
        case .deviceChanged(let device) where device.address == target:
            if device.connected {
                guard !isPairingLink(device.address, paired: device.paired, known: known) else { return }
                await linkUp()
                await servicesResolved(device)
            } else {
                await reconnect?.handle(.deviceSeen)  // in reach again
            }
        case .deviceRemoved(let address) where address == target:
            await linkDown()
        case .adapterChanged(let adapter) where adapter.powered:
            await reconnect?.handle(.deviceSeen)
        case .adapterRemoved, .bluetoothdVanished:
            // Every link went with it; the policy retries once BlueZ is back (start-up re-runs).
            await linkDown()
        default:
            break
        }
    }

    // MARK: - Internals

    /// Whether a link BlueZ reports up for `address` is only the one an attempt pairs over: to
    /// pair, bluetoothd brings up a link first (`Connected` true while `Paired` is still false),
    /// and drops it again if the speaker refuses. The speaker is connected, and remembered, only
    /// once paired: the attempt says so when its `Pair` and `Connect` succeed.
    /// Not only while our attempt is under way: BlueZ's signals reach us by another path than its
    /// answers, and the "connected" of a pairing the speaker refused can be read after the
    /// attempt has failed. A speaker not remembered is only
    /// ever one an attempt pairs, so its unpaired link is never taken for the speaker connected.
    /// `paired` is BlueZ's word on the device (nil: it does not know the device).
    private func isPairingLink(_ address: BluetoothAddress, paired: Bool?, known: [KnownSpeaker]) -> Bool {
        paired == false && mayBePairingLink(address, known: known)
    }

    /// Whether a link up for `address` could be a pairing's (so BlueZ's word on it is needed).
    private func mayBePairingLink(_ address: BluetoothAddress, known: [KnownSpeaker]) -> Bool {
        attemptLinkUp?.address == address || !known.contains { $0.address == address }
    }

    /// The target's link is up. Reported by several paths at once (our `Connect` returning,
    /// BlueZ's signal): whichever comes second waits until the first is delivered, so its
    /// caller never runs ahead of what the daemon knows.
    private func linkUp() async {
        guard !snapshot.connected else {
            await lastDelivery?.value
            return
        }
        if let attempt = attemptLinkUp, attempt.address == snapshot.target?.address { _ = attempt.signal.succeed(()) }
        snapshot.connected = true
        connecting = nil  // a user's disconnect sees the link itself from now on
        snapshot.activity = .idle
        lastFailureLogged = nil
        // The reconnect controller hears of the link before the daemon does, but inside the
        // delivery: from here until it is told, a second report of this link (our Connect's
        // answer beside BlueZ's signal) must find this delivery to wait for, not the one before
        // (it found that one, and `connect` answered before the state file had been written).
        let reconnect = reconnect
        await changed(after: { await reconnect?.handle(.connected) })
    }

    /// BlueZ's `ServicesResolved` for the connected target: followed once BlueZ has shown it
    /// true for this speaker (before that, the property says nothing: see `LinkSnapshot`).
    private func servicesResolved(_ device: Device) async {
        guard device.servicesResolved || snapshot.servicesResolved != nil else { return }
        guard snapshot.servicesResolved != device.servicesResolved else { return }
        snapshot.servicesResolved = device.servicesResolved
        await changed()
    }

    /// The target's link is down. Reported by several paths too (BlueZ's signal, our
    /// `Disconnect` returning, the device or adapter vanishing): as in `linkUp`, whichever comes
    /// second waits until the first is delivered, so a user's `disconnect` never answers with
    /// a status the daemon has not caught up with.
    private func linkDown() async {
        guard snapshot.connected else {
            await lastDelivery?.value
            return
        }
        drops += 1
        snapshot.connected = false
        if snapshot.servicesResolved != nil { snapshot.servicesResolved = false }  // resolved again on the next link
        snapshot.activity = heldByUser ? .heldByUser : .idle
        await changed()
    }

    private func reconnectChanged(_ change: ReconnectController<ErasedClock>.Change, address: BluetoothAddress) async {
        guard snapshot.target?.address == address else { return }
        if heldByUser, change != .holding { return }  // a late report from before the hold
        switch change {
        case .attempting: snapshot.activity = snapshot.connected ? .idle : .connecting
        case .retryScheduled(let delay): snapshot.activity = .retrying(in: delay)
        case .holding: snapshot.activity = .heldByUser
        case .needsPairing(let reason): snapshot.activity = .needsPairing(reason: reason)
        case .connected: snapshot.activity = .idle
        case .attemptFailed: return
        }
        await changed()
    }

    /// Hands the new snapshot to `onChange`, after every earlier one (deliveries form a chain),
    /// and returns once it is delivered. `first` starts at once and is awaited before the
    /// delivery. The delivery is `lastDelivery` before anything here suspends, so whoever sees
    /// the new snapshot and waits for `lastDelivery` waits for this one.
    private func changed(after first: (@Sendable () async -> Void)? = nil) async {
        snapshot.revision += 1
        let value = snapshot, previous = lastDelivery, onChange = onChange
        let before = first.map { first in Task { await first() } }
        let delivery = Task {
            await previous?.value
            await before?.value
            await onChange?(value)
        }
        lastDelivery = delivery
        await delivery.value
    }

    private func dropTarget() async {
        await detachReconnect()?.shutdown()
    }

    /// Lets go of the target's reconnects at once (its attempt cancelled, its changes no longer
    /// followed) and hands back its controller, for the caller to stop.
    private func detachReconnect() -> ReconnectController<ErasedClock>? {
        cancelInFlight()
        reconnectWatcher?.cancel()
        reconnectWatcher = nil
        defer { reconnect = nil }
        return reconnect
    }

    /// The connect operation's work asks this before it sends anything: false once the user
    /// has disconnected. Otherwise it is marked as connecting, for `stopConnecting`.
    private func mayConnect(_ operation: OperationID) -> Bool {
        guard !heldByUser, lifecycle == .following else { return false }
        connecting = operation
        return true
    }

    /// Cancels the connect operation past the hold, if any, and says whether there was one
    /// (its Connect may have reached BlueZ). Once this returns it sends nothing more: its
    /// work is cancelled, and a D-Bus call made from a cancelled task is never sent.
    private func stopConnecting() async -> Bool {
        guard let operation = connecting else { return false }
        connecting = nil
        await operations.cancel(operation)
        return true
    }

    /// The queue booked the connect operation's end: its work is finished or cancelled.
    private func connectEnded(_ operation: OperationID) {
        if connecting == operation { connecting = nil }
    }

    private func cancelInFlight() {
        inFlight?.task.cancel()
        inFlight = nil
    }

    /// One attempt, through the operation queue; a second ask for the same speaker joins it.
    private func attempt(_ address: BluetoothAddress) async -> AttemptResult {
        guard lifecycle == .following else { return .failed(reason: "speakerd is stopping") }
        guard !heldByUser else { return .failed(reason: "you disconnected it") }
        // A retry of a target let go of, due while its controller was being stopped.
        guard snapshot.target?.address == address else { return .failed(reason: "another speaker was chosen") }
        // A second ask joins the attempt under way and then judges its result like the first
        // (a joiner that returned at once could answer "connected" before the link is up).
        let result: AttemptResult, dropsBefore: Int
        if let inFlight, inFlight.address == address {
            dropsBefore = inFlight.dropsBefore
            result = await inFlight.task.value  // a joiner's cancellation is not the attempt's
        } else {
            dropsBefore = drops
            let task = Task { await self.runAttempt(address) }
            inFlight = (address, task, dropsBefore)
            result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
            if inFlight?.task == task { inFlight = nil }
        }
        guard lifecycle == .following else { return .failed(reason: "speakerd is stopping") }
        // The user disconnected while this attempt was under way: its success is older than
        // their wish (and BlueZ's view may not show the disconnection yet), so it is not a link.
        guard !heldByUser else { return .failed(reason: "you disconnected it") }
        guard snapshot.target?.address == address else { return .failed(reason: "another speaker was chosen") }
        guard result == .connected else { return result }
        // BlueZ reported the link down while our Connect was under way: its success may be
        // older than that, so BlueZ's own view decides.
        if drops != dropsBefore {
            let connected = (try? await bluez?.device(address))?.flatMap { $0 }?.connected ?? false
            guard connected else { return .failed(reason: "the link dropped again at once") }
        }
        await linkUp()
        return result
    }

    private func runAttempt(_ address: BluetoothAddress) async -> AttemptResult {
        guard let bluez else { return .failed(reason: "BlueZ is not reachable") }
        let settingUp = SettingUpMark()
        // The speaker may connect by itself while our Connect still pages it (switched on
        // meanwhile): BlueZ answers that Connect only after its page timeout, or never. The link
        // being up ends the attempt then (see `attemptLinkUp`). Marked before the operation is
        // queued, as its work may start at once: a pairing link reported before the mark was seen
        // as the speaker connected (CI, under AddressSanitizer).
        let linkCameUp = OneShotSignal<Void, Never>()
        attemptLinkUp = (address, linkCameUp)
        defer { if attemptLinkUp?.signal === linkCameUp { attemptLinkUp = nil } }
        let ticket = await operations.add("connect \(address)", group: "link", timeout: .seconds(10)) { [weak self] context in
            // The user may have disconnected while this waited in the queue: their disconnect
            // cancels the attempt (as `cancelInFlight` does), so no Connect goes out after it
            // and no failure is logged for it.
            guard let self, await self.mayConnect(context.id) else { throw CancellationError() }
            try await Self.connectSteps(bluez, address, clock: self.clock, settingUp: settingUp)
        }
        let operations = operations
        let outcome: OperationOutcome
        do {
            let ended = try await withTaskCancellationHandler {
                try await Self.firstEnd(of: ticket, or: linkCameUp)
            } onCancel: {
                Task { await operations.cancel(ticket.id) }
            }
            switch ended {
            case .operation(let ending):
                outcome = ending
            case .linkUp:
                // Paired and up: all our Connect had left to do is done. Its call is given up
                // (BlueZ keeps the link; nothing waits for, or later reports a timeout of, a
                // Connect that no longer matters). A speaker still pairing goes on as asked.
                // Not while the attempt still pairs or trusts the speaker: the link is then the
                // pairing's (bluetoothd says `Paired` well before it answers `Pair`, as it browses
                // the speaker's services first), and the trust and the `Connect` that brings the
                // audio profiles must still go out (`SettingUpMark`).
                if !settingUp.isSet, (try? await bluez.device(address))?.paired == true {
                    await operations.cancel(ticket.id)
                    return .connected
                }
                outcome = try await ticket.outcome()
            }
        } catch {
            // Its work may run on until the queue books the cancellation (and cancels it).
            Task { [weak self] in
                _ = try? await ticket.outcome()
                await self?.connectEnded(ticket.id)
            }
            return .failed(reason: "cancelled")
        }
        // A Connect that succeeded stays marked until the link is up (`linkUp`): until then
        // only this mark tells a user's disconnect that BlueZ has a link to end.
        if outcome != .ok { connectEnded(ticket.id) }
        switch outcome {
        case .ok: return .connected
        case .failed(let reason):
            noteFailure(address, reason)
            if let refusal = settingUp.refusal { return .pairingRefused(reason: refusal) }
            return .failed(reason: reason)
        case .timedOut:
            let reason = "it did not answer within 10 s (off or out of range)"
            noteFailure(address, reason)
            return .failed(reason: reason)
        case .cancelled: return .failed(reason: "cancelled")
        case .skipped(let reason): return .failed(reason: reason)
        }
    }

    /// How an attempt's wait ended: its operation's outcome, or the link to its speaker up.
    private enum AttemptEnd: Sendable {
        case operation(OperationOutcome)
        case linkUp
    }

    /// Whichever comes first: the connect operation ending, or the link coming up meanwhile.
    private static func firstEnd(of ticket: OperationTicket, or linkCameUp: OneShotSignal<Void, Never>) async throws -> AttemptEnd {
        try await withThrowingTaskGroup(of: AttemptEnd.self) { group in
            group.addTask { .operation(try await ticket.outcome()) }
            group.addTask {
                _ = try await linkCameUp.result()
                return .linkUp
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    /// Logs a failed attempt once per speaker and reason: a speaker that stays off is said once,
    /// not at every retry, until it connects or fails otherwise.
    private func noteFailure(_ address: BluetoothAddress, _ reason: String) {
        let failure = "\(address) \(reason)"
        guard failure != lastFailureLogged else { return }
        lastFailureLogged = failure
        logger.info("connecting \(snapshot.target?.name ?? "the speaker") (\(address)) failed: \(reason)")
    }

    /// How long an attempt waits for a speaker bluetoothd does not list (yet) before its `Connect`
    /// goes out anyway (and fails, "not known to bluetoothd"). bluetoothd lists an adapter's paired
    /// devices just after the adapter itself (a dongle plugged in, the adapter or bluetoothd back):
    /// start-up's run for the new adapter asks for the known speaker at once, and without this wait
    /// took the failure for "no known speaker answered" and scanned while the speaker was there.
    static let listingGrace = Duration.seconds(2)

    /// Pair and trust a new speaker, then `Connect`. A link that is already up is success, unless
    /// it is the one pairing brought up: bluetoothd connects the audio profiles only at our
    /// `Connect`, so it goes out after `Pair` whatever BlueZ says of the link meanwhile.
    private static func connectSteps(_ bluez: any BlueZClient, _ address: BluetoothAddress, clock: ErasedClock,
                                     settingUp: SettingUpMark) async throws {
        var listed = try await bluez.device(address)
        if listed == nil { listed = try await waitForListing(of: address, on: bluez, clock: clock) }
        if let device = listed {
            if device.connected { return }
            if !device.paired || !device.trusted {
                settingUp.set(true)
                if !device.paired {
                    do { try await bluez.pair(address) } catch let error as BlueZClientError {
                        if let refusal = error.bluezError?.pairingRefusal { settingUp.refused(refusal) }
                        throw error
                    }
                }
                if !device.trusted { try await bluez.setTrusted(address, true) }
                settingUp.set(false)
            }
        }
        do { try await bluez.connect(address) } catch let error as BlueZClientError where error.bluezError?.kind == .alreadyConnected {
            return  // Our cached view was stale (the link came up meanwhile).
        }
    }

    /// The device once bluetoothd lists it, or nil if it does not within `listingGrace`.
    private static func waitForListing(of address: BluetoothAddress, on bluez: any BlueZClient,
                                       clock: ErasedClock) async throws -> Device? {
        // Subscribed before looking again, so a listing in between is not missed.
        let events = bluez.events()
        if let device = try await bluez.device(address) { return device }
        let listing = try await timeboxed(listingGrace, clock: clock) { () async -> Device? in
            for await case .deviceAdded(let device) in events where device.address == address { return device }
            return nil
        }
        guard case .finished(let device) = listing else { return nil }
        return device
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

/// Set while a connect attempt pairs or trusts a new speaker: a link that comes up meanwhile
/// (the pairing's own) does not end the attempt, which runs on to its trust and its `Connect`.
/// Once the `Connect` is out, the link up ends the attempt as before: BlueZ goes on with a call
/// it has been sent, and nothing waits for a page that no longer matters.
/// It also carries why the speaker would not pair, when its `Pair` was refused: the attempt then
/// ends in `pairingRefused`, which no retry follows.
final class SettingUpMark: Sendable {
    private let flag = Atomic<Bool>(false)
    private let refusalSaid = Mutex<String?>(nil)
    func set(_ value: Bool) { flag.store(value, ordering: .releasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func refused(_ why: String) { refusalSaid.withLock { $0 = why } }
    var refusal: String? { refusalSaid.withLock { $0 } }
}
